"""The pipeline's steps: baseline, attribute, sweep, tables, report.

Each step is a function ``step(exp: Experiment) -> what it made``. It reads what earlier steps put
on the :class:`Experiment` (the run's shared state), writes its artifacts through the run folder
(:class:`~interp_heads.store.folder.RunFolder`), and is idempotent: its units of work carry resume keys,
so a rerun reuses what is stored and recomputes only what is missing or made under other inputs.
A run takes the steps its config and command call for (``pipeline.experiment.plan_steps``:
``attribute`` stops after the ranking; a given ranking replaces ``attribute`` and ``known``). :func:`run_steps` times each step and rewrites the
manifest after it, so the manifest always says how far a run got.

The sweep's unit of work is one condition (task, selection, k, seed), run and stored by
``interp_heads.sweep.loop.run_sweep``; executors run those units elsewhere and hand back their records.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from interp_heads.attribution.scores import load_stored
from interp_heads.pipeline.analysis_steps import specificity_step, stability_step
from interp_heads.pipeline.attention_step import attention_step
from interp_heads.pipeline.baseline_step import baseline, baseline_step, rows_key  # noqa: F401
from interp_heads.pipeline.known_step import known_step
from interp_heads.pipeline.ranking_checks import (
    heads_to_verify,
    needs_verification,
    record_verification,
    verify_stored,
)
from interp_heads.pipeline.ranking_stability import halves_for_stored, record_stability
from interp_heads.pipeline.state import Experiment, Step, progress_bar
from interp_heads.pipeline.sufficiency_step import sufficiency_step
from interp_heads.registry import Registry
from interp_heads.store import faults, resume
from interp_heads.tasks.schema import Task

if TYPE_CHECKING:
    from interp_heads.config.run_config import RunConfig

# --------------------------------------------------------------------------- attribute
# Options in the attribution key as they resolve, absent at 0 (their value before they existed):
# older folders hold. A method's other own options (``ablation_ig``'s ``steps``) are in it away
# from their defaults (``exact_layers`` is in ``attribution_settings`` as configured).
OPTIONAL_KEYS = ("rivals", "lookahead")


def _keyed(name: str, value, defaults: dict) -> bool:
    """Whether a setting is part of the attribution key (see ``OPTIONAL_KEYS``)."""
    if name in OPTIONAL_KEYS:
        return bool(value)
    return name not in defaults or name == "exact_layers" or value != defaults[name]


def attribute_step(exp: Experiment) -> dict:
    """Every task's ``HeadScores`` on its rank split (stored per task, reused when inputs match)."""
    from interp_heads.attribution import attribute_heads
    from interp_heads.attribution.methods import METHODS

    cfg = exp.config
    method = cfg.method_class()
    if method is not None and method.multi_task:  # one model over all tasks (probe)
        from interp_heads.pipeline.probe_step import probe_attribute_step

        return probe_attribute_step(exp)
    with progress_bar(len(exp.splits), "attribution", exp.quiet) as bar:
        for name, (rank, _) in exp.splits.items():
            t = time.perf_counter()
            settings = cfg.attribution_settings(exp.fmts[name])
            opts = cfg.method_options(has_corrupted=rank.has_corrupted, task=name)
            own = dataclasses.asdict(opts)  # the options of the method the task resolves to
            defaults = {k: v for k, v in METHODS.option_defaults().items() if k in own}
            settings |= {k: own[k] for k in defaults if k != "exact_layers"}
            fp = resume.model_fingerprint(exp.model)
            keyed = {k: v for k, v in settings.items() if _keyed(k, v, defaults)}
            key = resume.attribution_key(fp, rows_key(exp.model, rank, exp.fmts[name]), **keyed)
            scores = load_stored(
                exp.folder.attribution_entry(name), key
            )  # None: absent, damaged or other inputs
            m = heads_to_verify(cfg)
            if scores is None:
                scores = attribute_heads(exp.model, rank, **settings, verify=m or None)
                scores.provenance["resume_key"] = key
                scores.provenance.update(exp.provenance, fmt_info=exp.fmt_infos.get(name))
                record_stability(exp, name, scores)
                exp.folder.save_scores(name, scores)
            else:
                if needs_verification(scores, m):
                    verify_stored(exp, name, rank, scores, m)
                changed = halves_for_stored(exp, rank, scores, settings)
                if record_stability(exp, name, scores) or changed:
                    exp.folder.save_scores(name, scores)
            exp.rankings[name] = scores
            exp.timings[f"{name}/attribution"] = time.perf_counter() - t
            record_verification(exp, name, scores, m)
            bar.update(1)
    exp.folder.write_rankings(exp.rankings)
    return exp.rankings


# --------------------------------------------------------------------------- sweep, tables, report
def sweep_step(exp: Experiment):
    """Mask TopK and random heads on every task's eval split while generating; score the answers."""
    from interp_heads.sweep.loop import run_sweep

    result = run_sweep(
        exp.model,
        exp.eval_tasks,
        exp.rankings,
        exp.sweep_config,
        exp.metrics,
        batch_size=exp.batch_size,
        out_dir=exp.folder.root,
        force=exp.force,
        progress=not exp.quiet,
        **exp.sweep_options,
    )
    exp.timings.update({f"{n}/sweep": s for n, s in result.timings.items()})
    from interp_heads.store.conditions import entry_name

    done = result.generations[["task", "selection", "k", "seed"]].drop_duplicates()
    conditions = sorted(
        entry_name(t, sel, int(k), int(seed)) for t, sel, k, seed in done.itertuples(index=False)
    )
    m = exp.manifest
    m = m.with_updates(files={**(m.files or {}), "conditions": conditions})
    m = m.with_updates(metric_cache=result.metric_cache)  # distinct answers, scored once
    if result.shared is not None:  # conditions read from the shared store, and generated
        m = m.with_updates(shared_generations=result.shared)
    if exp.sweep_config.elbow:
        from interp_heads.sweep.elbow import elbow_k

        m = m.with_updates(elbow_k={n: elbow_k(r) for n, r in exp.rankings.items()})
    if exp.config.damage_matched:
        from interp_heads.sweep.damage import damage_matched

        first = str(exp.sweep_config.metrics[0])
        m = m.with_updates(damage_k=damage_matched(result.records, first), damage_metric=first)
    exp.manifest = m
    exp.result = result
    return result


def tables_step(exp: Experiment) -> None:
    """``sweep.parquet``, ``summary``, ``significance.csv`` and ``generations.jsonl``."""
    from interp_heads.run import RunWriter

    RunWriter(exp.folder).sweep_outputs(exp.result, exp.eval_tasks)


def report_step(exp: Experiment):
    """Figures and ``index.html`` (also ``interp-heads report DIR`` later, without the model)."""
    from interp_heads.report import build_report
    from interp_heads.store import lifecycle

    written: list = []
    index = build_report(exp.folder.root, written=written)
    exp.manifest = lifecycle.note_outputs(exp.manifest, exp.folder, written)
    return index


@dataclass(frozen=True)
class PipelineStep:
    """A registered step: ``run(exp)`` does its work; ``wanted(config)`` says whether a whole run
    (``interp-heads run``) takes it; ``ranks``: whether ranking the heads only
    (``interp-heads attribute``, :func:`~interp_heads.pipeline.experiment.attribute_steps`) takes it.
    A run takes its steps in the order they were registered, the report last (:func:`planned`)."""

    name: str
    run: Step
    wanted: Callable[[RunConfig], bool] = field(default=lambda config: False)
    ranks: bool = False


def _ranks_here(config: RunConfig) -> bool:
    return not config.given_ranking  # a given ranking replaces ranking the heads


# A registry like every extension point's (``interp_heads.registry``); a step is a record, read
# with ``STEPS.get``. A user's step registers the same way and is planned by its ``wanted``.
STEPS: Registry[PipelineStep] = Registry("pipeline step")
for _step in (
    PipelineStep("baseline", baseline_step, lambda config: True, ranks=True),
    PipelineStep("attribute", attribute_step, _ranks_here, ranks=True),
    PipelineStep("known", known_step, _ranks_here, ranks=True),
    PipelineStep("attention", attention_step, ranks=True),  # the ranking's page only
    PipelineStep("sweep", sweep_step, lambda config: True),
    PipelineStep("tables", tables_step, lambda config: True),
    PipelineStep("specificity", specificity_step, lambda config: "specificity" in config.analyses),
    PipelineStep("stability", stability_step, lambda config: "stability" in config.analyses),
    PipelineStep("sufficiency", sufficiency_step, lambda config: config.sufficiency),
    PipelineStep("report", report_step, lambda config: True, ranks=True),
):
    STEPS.register(_step)


def planned(takes: Callable[[PipelineStep], bool]) -> list[str]:
    """The registered steps ``takes`` accepts, in registered order with ``report`` last (a step
    registered after the built-ins is still on the page)."""
    names = [s.name for s in STEPS.classes() if takes(s)]
    return [n for n in names if n != "report"] + ["report"]


def run_steps(
    exp: Experiment,
    names: list[str],
    start: float | None = None,
    on_step: Callable[[str], object] | None = None,
) -> dict[str, Any]:
    """Run the named steps in order; time each and rewrite the manifest after it.

    The manifest records the planned steps (``plan``) and those finished in this invocation under
    this config (``steps``), so the page the report step draws knows which of the folder's tables
    are this run's (a table left by an earlier config is not) and which step finished last. It is
    written before the first step too (``store.lifecycle.started``), and lists every table, figure and
    page the steps wrote (``files.outputs``): a later ``--force`` run retires exactly those.
    ``on_step`` is called with each step's name as it starts (a command's progress bar).
    """
    from interp_heads.store import lifecycle

    start = time.perf_counter() if start is None else start
    made: dict[str, Any] = {}
    with lifecycle.started(exp, names):  # "started" before any step; --force retires
        for i, name in enumerate(names):
            t = time.perf_counter()
            if on_step is not None:
                on_step(name)
            faults.point(f"step:{name}")
            made[name] = STEPS.get(name).run(exp)
            outputs = exp.folder.step_outputs(name)
            exp.manifest = lifecycle.note_outputs(exp.manifest, exp.folder, outputs)
            if name in ("sweep", "report"):
                exp.timings[name] = time.perf_counter() - t
            exp.timings["total"] = time.perf_counter() - start
            exp.manifest = exp.manifest.with_updates(steps=[*exp.manifest.steps, name])
            lifecycle.finish_retiring(exp)
            exp.write_manifest("complete" if i == len(names) - 1 else "running")
    return made


def task_hash(task: Task) -> str:
    blob = json.dumps([e.to_dict() for e in task], sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()
