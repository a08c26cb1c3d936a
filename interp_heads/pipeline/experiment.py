"""The scripted ablation run: baseline, attribution, sweep, figures and report in one folder.

``run_pipeline(RunConfig.from_toml("configs/seed_figure.toml"), "runs/demo")`` loads the model,
then for every task keeps the correctly answered examples, ranks the heads on the first
``n_rank`` of them, sweeps ``k x selection x seed`` on the rest (up to ``n_eval``) and writes the
run directory (see ``docs/cli.md``). Everything is checked before the first file is written, so a
bad input never damages an earlier run; an interrupted run resumes where it stopped.

The work itself is the list of steps in :mod:`interp_heads.pipeline.steps`; this module checks the inputs,
builds the :class:`~interp_heads.pipeline.steps.Experiment` and runs every step.
"""

from __future__ import annotations

import contextlib
import io
import os
import time
from pathlib import Path

from interp_heads.config import validation
from interp_heads.config.run_config import RunConfig, check_ks
from interp_heads.errors import one_line
from interp_heads.execution import threads
from interp_heads.models.specs import load_any_model
from interp_heads.pipeline.loading import PipelineError, load_any_task, load_any_tasks
from interp_heads.pipeline.steps import Experiment, baseline, run_steps, task_hash
from interp_heads.store import releases_locks
from interp_heads.store.folder import RunFolder

__all__ = [
    "PipelineError",
    "RunConfig",
    "baseline",
    "check_ks",
    "load_any_model",
    "load_any_task",
    "build_experiment",
    "run_pipeline",
    "task_formats",
]


def task_formats(config: RunConfig, model, tasks: dict) -> tuple[dict[str, str], dict[str, dict]]:
    """Each task's prompt format (the config's, else declared by the task, else measured)."""
    from interp_heads.tasks.fmt import resolve_format

    fmts, infos = {}, {}
    for name, task in tasks.items():
        fmts[name], infos[name] = resolve_format(
            model,
            task,
            config.fmt,
            max_new_tokens=config.max_new_tokens,
            batch_size=config.batch_size,
        )
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


def _tasks(config: RunConfig) -> dict:
    tasks = {}
    for spec in config.tasks:
        for task in load_any_tasks(config.task_path(spec)):  # a CogQA file: one per skill
            task = task.subset(n=config.max_examples)
            if task.name in tasks:
                raise PipelineError(f"task {task.name!r} is listed twice")
            tasks[task.name] = task
    return tasks


def _sweep_config(config: RunConfig, ks: list[int], fmts: dict):
    from interp_heads.sweep.config import SweepConfig

    return SweepConfig(
        ks=ks,
        selections=[str(s) for s in config.selections],
        seeds=config.seeds,
        exclude_top=config.exclude_top,
        ablation=str(config.ablation),
        positions=str(config.positions),
        scale=config.scale_factor,
        max_new_tokens=config.max_new_tokens,
        metrics=[str(m) for m in config.metrics],
        reference=str(config.reference),
        free_form=config.free_form,
        elbow=config.elbow,
        fmt=next(iter(set(fmts.values()))) if len(set(fmts.values())) == 1 else None,
    )


def build_experiment(
    config: RunConfig, out_dir: str | os.PathLike, force: bool = False, quiet: bool = False
) -> Experiment:
    """Load and check everything a run needs, then take the run folder; nothing is written before.

    Raises:
        PipelineError: a bad input (config, task, model, metric, folder).
    """
    import torch

    from interp_heads.metrics import MetricUnavailable, resolve_metrics

    t0 = time.perf_counter()
    RunFolder(out_dir).check_usable(force)  # before any work
    torch.manual_seed(config.seed)
    model = _model(config)
    timings = {"load_model": time.perf_counter() - t0}
    ks = config.resolved_ks(model.cfg.n_layers * model.cfg.n_heads)
    tasks = _tasks(config)
    for task in tasks.values():  # before task_formats generates: the longest rendering
        validation.check_prompt_lengths(
            model, task, config.fmt or task.fmt, config.max_new_tokens, corrupted=task.has_corrupted
        )
    try:
        metrics = resolve_metrics([str(m) for m in config.metrics], config.comet_model)
    except (MetricUnavailable, ValueError) as exc:
        raise PipelineError(one_line(exc)) from None
    fmts, fmt_infos = task_formats(config, model, tasks)
    folder = RunFolder(out_dir)
    folder.claim(config.digest(), force)  # before any long step: fail fast
    earlier = folder.read_manifest()
    digest = config.digest()
    history = (
        earlier.get("earlier_timings", []) + [earlier.get("timings", {})]
        if earlier.get("config_digest") == digest
        else []
    )
    exp = Experiment(
        config=config,
        folder=folder,
        model=model,
        tasks=tasks,
        fmts=fmts,
        fmt_infos=fmt_infos,
        metrics=metrics,
        ks=ks,
        quiet=quiet,
        force=force,  # nothing is deleted: each unit's resume key decides what is recomputed
        digest=digest,
        batch_size=config.batch_size,
        timings=timings,
        sweep_config=_sweep_config(config, ks, fmts),
    )
    exp.manifest.update(
        data={
            n: {"source": t.source, "sha256": t.sha256 or task_hash(t), "n_examples": len(t)}
            for n, t in tasks.items()
        },
        seeds={"torch": config.seed, "random_draws": config.seeds},
        earlier_timings=history,
    )
    return exp


@releases_locks
def run_pipeline(
    config: RunConfig, out_dir: str | os.PathLike, force: bool = False, quiet: bool = False
) -> Path:
    """Run every step and write the run directory; returns the path of ``index.html``.

    Raises:
        PipelineError: a bad input, before anything is written to ``out_dir`` (a folder this
            call created is removed again when the run fails before any result is stored).
    """
    from interp_heads.execution.registry import open_executor
    from interp_heads.store.lifecycle import removed_if_unused

    start = time.perf_counter()
    with removed_if_unused():  # a folder this call made and left unused goes if it fails
        exp = build_experiment(config, out_dir, force=force, quiet=quiet)
        with open_executor(config, exp.model) as executor:  # None: this process
            exp.sweep_options["executor"] = executor
            steps = ["baseline", "attribute", "known", "sweep", "tables", "report"]
            made = run_steps(exp, steps, start=start)
    return made["report"]
