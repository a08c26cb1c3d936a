"""The one road to an experiment: a ``RunConfig`` in, a run folder out.

``run_pipeline(RunConfig.from_toml("configs/seed_figure.toml"), "runs/demo")`` loads the model,
then for every task keeps the correctly answered examples, ranks the heads on the first
``n_rank`` of them, sweeps ``k x selection x seed`` on the rest (up to ``n_eval``) and writes the
run directory (see ``docs/cli.md``). ``interp-heads run``, ``attribute`` and ``ablate`` all come
here: ``attribute`` runs the steps up to the ranking (:func:`attribute_steps`), and a config with a
given ranking (``ranking =`` or ``heads =``, what ``ablate`` builds) masks that ranking instead of
ranking the heads (:func:`plan_steps`).

Everything is checked before the first file is written, the settings whose range depends on the
model included, so a bad input never damages an earlier run; an interrupted run resumes where it
stopped. The work itself is the list of steps in :mod:`interp_heads.pipeline.steps`.
"""

from __future__ import annotations

import contextlib
import io
import os
import time
from dataclasses import replace
from pathlib import Path

from interp_heads.config.run_config import RunConfig, check_ks
from interp_heads.models import threads
from interp_heads.models.specs import load_any_model
from interp_heads.pipeline.artefacts import Artefacts
from interp_heads.pipeline.baseline_step import split_examples
from interp_heads.pipeline.given_ranking import manifest_record
from interp_heads.pipeline.inputs import check_inputs
from interp_heads.pipeline.loading import PipelineError, load_any_task
from interp_heads.pipeline.plan_check import check_plan
from interp_heads.pipeline.record import RunRecord
from interp_heads.pipeline.state import Invocation
from interp_heads.pipeline.steps import Experiment, baseline, planned, run_steps, task_hash
from interp_heads.run import Manifest
from interp_heads.store import releases_locks
from interp_heads.store.folder import RunFolder

__all__ = [
    "PipelineError",
    "RunConfig",
    "attribute_steps",
    "baseline",
    "build_experiment",
    "check_ks",
    "load_any_model",
    "load_any_task",
    "plan_steps",
    "run_experiment",
    "run_pipeline",
    "task_formats",
]


def attribute_steps() -> list[str]:
    """The steps that rank the heads without a sweep (``interp-heads attribute``): baseline,
    attribute, known, attention, report, and any registered step with ``ranks``
    (``pipeline.steps.planned``: registered order, ``report`` last)."""
    return planned(lambda step: step.ranks)


def plan_steps(config: RunConfig) -> list[str]:
    """The steps a whole run takes (``pipeline.steps.planned``: registered order, ``report``
    last): rank the heads (or mask a given ranking), sweep, tables, the ``analyses`` asked for,
    the kept-set curves (``sufficiency = true``), report."""
    return planned(lambda step: step.wanted(config))


def task_formats(
    config: RunConfig, model, tasks: dict, given: dict | None = None
) -> tuple[dict[str, str], dict[str, dict]]:
    """Each task's prompt format: the config's, else a given ranking's (its heads were ranked in
    it), else declared by the task, else measured."""
    from interp_heads.tasks.prompt_format import resolve_format

    fmts, infos = {}, {}
    for name, task in tasks.items():
        ranked_in = (given or {}).get(name) and given[name].fmt
        fmts[name], infos[name] = resolve_format(
            model,
            task,
            config.fmt or ranked_in,
            max_new_tokens=config.max_new_tokens,
            batch_size=config.batch_size,
        )
        if ranked_in and not config.fmt:
            infos[name] = {"source": "ranking"}
    return fmts, infos


def _model(config: RunConfig):
    """The run's model, its torch threads set (explicitly, or shared with later processes)."""
    with contextlib.redirect_stdout(io.StringIO()):  # TransformerLens' "Moving model to device"
        model = load_any_model(
            config.model, config.device, n_devices=config.n_devices, backend=config.backend
        )
    if config.threads is not None:
        threads.configure(config.threads)
    threads.watch(model)  # else share the cores with interp-heads processes that start later
    return model


def build_experiment(
    config: RunConfig,
    out_dir: str | os.PathLike,
    force: bool = False,
    quiet: bool = False,
    steps: list[str] | None = None,
    notes: bool = False,
    bars: tuple[str, ...] = (),
) -> tuple[Experiment, RunRecord]:
    """Load and check everything a run needs, then take the run folder; nothing is written before.
    Returns the run's inputs and its record (the plan's artefacts, the model's load time, the
    manifest's record of the inputs). ``bars``: the steps whose own progress bar shows although
    ``quiet`` (``Invocation.bars``).

    Raises:
        PipelineError: a bad input (config, task, model, ranking, metric, folder).
    """
    import torch

    steps = steps or plan_steps(config)
    tasks = check_inputs(config, out_dir, force)  # folder, tasks, ranking, model name: no model
    t0 = time.perf_counter()
    torch.manual_seed(config.seed)
    model = _model(config)
    timings = {"load_model": time.perf_counter() - t0}
    plan = check_plan(config, model, tasks, steps, task_formats)  # the whole plan, first
    folder = RunFolder(out_dir)
    digest = config.digest()
    made = {  # the plan's artefacts (pipeline.artefacts.PLANNED), read by the steps declaring them
        "fmts": plan.fmts, "fmt_infos": plan.fmt_infos, "metrics": plan.metrics, "ks": plan.ks,
        "sweep_config": plan.sweep_config, "given": plan.given,
    }  # fmt: skip
    if plan.given:
        made["rankings"] = {name: g.ranking for name, g in plan.given.items()}
    # force: nothing is deleted; each unit's resume key decides what is recomputed
    invocation = Invocation(quiet=quiet, notes=notes, force=force, bars=tuple(bars))
    exp = Experiment(config=config, folder=folder, model=model, tasks=tasks, invocation=invocation)
    record = RunRecord(digest=digest, artefacts=Artefacts(made), timings=timings)
    _describe(exp, record, folder.read_manifest(), steps, plan)
    if "baseline" in steps:  # which examples are left (it generates): a task left with none
        split = split_examples(exp, record, steps, plan.fmts, plan.given)  # is refused
        record.artefacts.put(vars(split), "plan")  # before the claim
    folder.claim(digest, force)  # nothing was written before: a refusal leaves the folder as it was
    return exp, record


def _describe(exp: Experiment, record: RunRecord, earlier: dict, steps: list[str], plan) -> None:
    """The manifest's record of the inputs, and the notes a user reads on stderr."""
    from interp_heads.tasks.prompt_format import describe

    config, tasks = exp.config, exp.tasks
    earlier = Manifest.from_dict(earlier)
    same = earlier.config_digest == record.digest
    history = (earlier.earlier_timings or []) + [earlier.timings or {}] if same else []
    manifest = record.manifest.with_updates(
        data={
            n: {"source": t.source, "sha256": t.sha256 or task_hash(t), "n_examples": len(t)}
            for n, t in tasks.items()
        },
        seeds={"torch": config.seed, "random_draws": config.seeds},
        earlier_timings=history,
    )
    if "sweep" not in steps:
        manifest = manifest.with_updates(command="attribute")
    if plan.given:
        manifest = manifest.with_updates(
            command="ablate", ranking=manifest_record(config, plan.given)
        )
    record.manifest = manifest
    for name in tasks:
        exp.say(
            (f"{name}: " if len(tasks) > 1 else "")
            + describe(plan.fmts[name], plan.fmt_infos[name])
        )


@releases_locks
def run_experiment(
    config: RunConfig,
    out_dir: str | os.PathLike,
    force: bool = False,
    quiet: bool = False,
    steps: list[str] | None = None,
    notes: bool = False,
    progress=None,
    bars: tuple[str, ...] = (),
) -> tuple[Experiment, dict, RunRecord]:
    """Run ``steps`` (default: :func:`plan_steps`) and write the run directory; returns the
    run's inputs, what each step returned (its declared outputs) and the run's record (its
    manifest as written). ``notes``: say on stderr what was chosen (the prompt format, the
    examples left out), as ``attribute`` and ``ablate`` do. ``bars``: the steps whose own
    progress bar shows although ``quiet`` (``attribute``: the known heads').
    ``progress``: a function of the experiment and the steps giving a context that yields ``run_steps``' ``on_step`` (a command's bar).

    Raises:
        PipelineError: a bad input, before anything is written to ``out_dir`` (a folder this
            call created is removed again when the run fails before any result is stored).
    """
    from interp_heads.execution.registry import open_executor
    from interp_heads.generation.prefix import release_prefixes
    from interp_heads.store.lifecycle import removed_if_unused

    start = time.perf_counter()
    steps = steps or plan_steps(config)
    with removed_if_unused():  # a folder this call made and left unused goes if it fails
        exp, record = build_experiment(config, out_dir, force, quiet, steps, notes, bars)
        with open_executor(config, exp.model) as executor:  # None: this process
            # where the sweep runs, and the generations shared with other runs (when set)
            how = replace(exp.invocation, executor=executor, shared=config.shared_store)
            exp = replace(exp, invocation=how)
            bar = progress(exp, steps) if progress else contextlib.nullcontext()
            try:
                with bar as on_step:
                    made = run_steps(exp, record, steps, start=start, on_step=on_step)
            finally:
                release_prefixes(exp.model)  # the prompt passes the run's steps shared
    return exp, made, record


@releases_locks
def run_pipeline(
    config: RunConfig, out_dir: str | os.PathLike, force: bool = False, quiet: bool = False
) -> Path:
    """Run every step of :func:`plan_steps` and write the run directory; returns ``index.html``."""
    return run_experiment(config, out_dir, force=force, quiet=quiet)[1]["report"].index
