"""The pipeline's steps: baseline, attribute, sweep, tables, report.

Each step is a registered :class:`PipelineStep` that declares what it reads (artefacts of the plan
or of earlier steps, config sections) and writes; its function ``run(exp, inputs, record)`` gets
the run's inputs (:class:`Experiment`: config, model, tasks, folder, and the command's
``invocation``), exactly its declared artefacts (:mod:`interp_heads.pipeline.artefacts`) and the
run's record to note what it measured in (:class:`~interp_heads.pipeline.record.RunRecord`:
manifest, timings), returns a frozen dataclass of what it writes (stored by
:func:`run_steps` under those names), writes its files through the run folder
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
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from interp_heads.attribution.scores import load_stored
from interp_heads.pipeline.analysis_steps import (
    SpecificityOutput,
    StabilityOutput,
    specificity_step,
    stability_step,
)
from interp_heads.pipeline.artefacts import Inputs, outputs
from interp_heads.pipeline.attention_step import AttentionOutput, attention_step
from interp_heads.pipeline.baseline_step import BaselineOutput, baseline, baseline_step, rows_key  # noqa: F401
from interp_heads.pipeline.config_view import StepConfig
from interp_heads.pipeline.known_step import KnownOutput, known_step
from interp_heads.pipeline.ranking_checks import (
    AttributeOutput,
    heads_to_verify,
    needs_verification,
    record_verification,
    verify_stored,
)
from interp_heads.pipeline.ranking_stability import halves_for_stored, record_stability
from interp_heads.pipeline.record import RunRecord
from interp_heads.pipeline.state import Experiment, progress_bar
from interp_heads.pipeline.sufficiency_step import SufficiencyOutput, sufficiency_step
from interp_heads.registry import Registry
from interp_heads.store import faults, resume
from interp_heads.tasks.schema import Task

if TYPE_CHECKING:
    from pathlib import Path

    from interp_heads.config.run_config import RunConfig
    from interp_heads.sweep.result import SweepResult

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


def attribute_step(exp: Experiment, inputs: Inputs, record: RunRecord) -> AttributeOutput:
    """Every task's ``HeadScores`` on its rank split (stored per task, reused when inputs match)."""
    from interp_heads.attribution import attribute_heads
    from interp_heads.attribution.methods import METHODS

    cfg, fmts, rankings = exp.config, inputs.fmts, {}
    method = cfg.method_class()
    if method is not None and method.multi_task:  # one model over all tasks (probe)
        from interp_heads.pipeline.probe_step import probe_attribute_step

        return probe_attribute_step(exp, inputs, record)
    with progress_bar(len(inputs.splits), "attribution", exp.invocation.quiet) as bar:
        for name, (rank, _) in inputs.splits.items():
            t = time.perf_counter()
            settings = cfg.attribution_settings(fmts[name])
            opts = cfg.method_options(has_corrupted=rank.has_corrupted, task=name)
            own = dataclasses.asdict(opts)  # the options of the method the task resolves to
            defaults = {k: v for k, v in METHODS.option_defaults().items() if k in own}
            settings |= {k: own[k] for k in defaults if k != "exact_layers"}
            fp = resume.model_fingerprint(exp.model)
            keyed = {k: v for k, v in settings.items() if _keyed(k, v, defaults)}
            key = resume.attribution_key(fp, rows_key(exp.model, rank, fmts[name]), **keyed)
            scores = load_stored(
                exp.folder.attribution_entry(name), key
            )  # None: absent, damaged or other inputs
            m = heads_to_verify(cfg)
            if scores is None:
                scores = attribute_heads(exp.model, rank, **settings, verify=m or None)
                scores.provenance["resume_key"] = key
                scores.provenance.update(
                    filter_correct=cfg.filter_correct, fmt_info=inputs.fmt_infos.get(name)
                )
                record_stability(record, name, scores, inputs.ks)
                exp.folder.save_scores(name, scores)
            else:
                if needs_verification(scores, m):
                    verify_stored(exp, name, rank, scores, m, fmts[name])
                changed = halves_for_stored(exp, rank, scores, settings)
                if record_stability(record, name, scores, inputs.ks) or changed:
                    exp.folder.save_scores(name, scores)
            rankings[name] = scores
            record.timings[f"{name}/attribution"] = time.perf_counter() - t
            record_verification(exp, record, name, scores, m)
            bar.update(1)
    exp.folder.write_rankings(rankings)
    return AttributeOutput(rankings, fmts)


# --------------------------------------------------------------------------- sweep, tables, report
@dataclass(frozen=True)
class SweepOutput:
    """The sweep's records and generations (``sweep.result.SweepResult``)."""

    sweep_result: SweepResult


def sweep_step(exp: Experiment, inputs: Inputs, record: RunRecord) -> SweepOutput:
    """Mask TopK and random heads on every task's eval split while generating; score the answers."""
    from interp_heads.sweep.loop import run_sweep

    sweep_config = inputs.sweep_config
    result = run_sweep(
        exp.model,
        inputs.eval_tasks,
        inputs.rankings,
        sweep_config,
        inputs.metrics,
        batch_size=exp.config.batch_size,
        out_dir=exp.folder.root,
        force=exp.invocation.force,
        progress=not exp.invocation.quiet,
        **exp.invocation.sweep_options(),
    )
    record.timings.update({f"{n}/sweep": s for n, s in result.timings.items()})
    from interp_heads.store.conditions import entry_name

    done = result.generations[["task", "selection", "k", "seed"]].drop_duplicates()
    conditions = sorted(
        entry_name(t, sel, int(k), int(seed)) for t, sel, k, seed in done.itertuples(index=False)
    )
    m = record.manifest
    m = m.with_updates(files={**(m.files or {}), "conditions": conditions})
    m = m.with_updates(metric_cache=result.metric_cache)  # distinct answers, scored once
    if result.shared is not None:  # conditions read from the shared store, and generated
        m = m.with_updates(shared_generations=result.shared)
    if sweep_config.elbow:
        from interp_heads.sweep.elbow import elbow_k

        m = m.with_updates(elbow_k={n: elbow_k(r) for n, r in inputs.rankings.items()})
    if exp.config.damage_matched:
        from interp_heads.sweep.damage import damage_matched

        first = str(sweep_config.metrics[0])
        m = m.with_updates(damage_k=damage_matched(result.records, first), damage_metric=first)
    record.manifest = m
    return SweepOutput(result)


@dataclass(frozen=True)
class TablesOutput:
    """Nothing for a later step: the tables are the folder's (``run.RunWriter.sweep_outputs``)."""


def tables_step(exp: Experiment, inputs: Inputs, record: RunRecord) -> TablesOutput:
    """``sweep.parquet``, ``summary``, ``significance.csv`` and ``generations.jsonl``."""
    from interp_heads.run import RunWriter

    RunWriter(exp.folder).sweep_outputs(inputs.sweep_result, inputs.eval_tasks)
    return TablesOutput()


@dataclass(frozen=True)
class ReportOutput:
    """The page, ``index.html``."""

    index: Path


def report_step(exp: Experiment, inputs: Inputs, record: RunRecord) -> ReportOutput:
    """Figures and ``index.html`` (also ``interp-heads report DIR`` later, without the model)."""
    from interp_heads.report import build_report
    from interp_heads.store import lifecycle

    written: list = []
    index = build_report(exp.folder.root, written=written)
    record.manifest = lifecycle.note_outputs(record.manifest, exp.folder, written)
    return ReportOutput(index)


@dataclass(frozen=True)
class PipelineStep:
    """A registered step: ``run(exp, inputs, record)`` does its work and returns what it ``writes`` (a
    frozen dataclass of those fields, ``output``, or a mapping of those names); ``reads``: the
    artefacts it is handed (``inputs``: made by the plan or an earlier step,
    :mod:`interp_heads.pipeline.artefacts`); ``config``: the config sections it reads
    (``config.sections.SECTIONS``; the step's ``exp.config`` answers only those and refuses
    any other field: ``pipeline.config_view.StepConfig``). ``wanted(config)`` says whether a whole run
    (``interp-heads run``) takes it; ``ranks``: whether ranking the heads only
    (``interp-heads attribute``, :func:`~interp_heads.pipeline.experiment.attribute_steps`) takes it.
    A run takes its steps in the order they were registered, the report last (:func:`planned`)."""

    name: str
    run: Callable[[Experiment, Inputs, RunRecord], Any]
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    config: tuple[str, ...] = ()
    output: type | None = None
    wanted: Callable[[RunConfig], bool] = field(default=lambda config: False)
    ranks: bool = False


def _ranks_here(config: RunConfig) -> bool:
    return not config.given_ranking  # a given ranking replaces ranking the heads


def _always(config: RunConfig) -> bool:
    return True


_GEN = ("generation",)
# A registry like every extension point's (``interp_heads.registry``); a step is a record, read
# with ``STEPS.get``. A user's step registers the same way and is planned by its ``wanted``.
STEPS: Registry[PipelineStep] = Registry("pipeline step")
for _step in (
    PipelineStep(
        "baseline", baseline_step, reads=("base_rows", "baseline_entries"),
        writes=("baseline_table",), config=("tasks",), output=BaselineOutput, wanted=_always,
        ranks=True,
    ),
    PipelineStep(
        "attribute", attribute_step, reads=("splits", "fmts", "fmt_infos", "ks"),
        writes=("rankings", "fmts"), config=("tasks", "attribution", "ablation", *_GEN),
        output=AttributeOutput, wanted=_ranks_here, ranks=True,
    ),
    PipelineStep(
        "known", known_step, writes=("known_table",), config=("attribution",),
        output=KnownOutput, wanted=_ranks_here, ranks=True,
    ),
    PipelineStep(  # the ranking's page only
        "attention", attention_step, reads=("rankings", "splits", "fmts"), writes=("attention",),
        output=AttentionOutput, ranks=True,
    ),
    PipelineStep(
        "sweep", sweep_step, reads=("splits", "rankings", "sweep_config", "metrics"),
        writes=("sweep_result",), config=("sweep", "placement", *_GEN), output=SweepOutput,
        wanted=_always,
    ),
    PipelineStep(
        "tables", tables_step, reads=("sweep_result", "splits"), output=TablesOutput,
        wanted=_always,
    ),
    PipelineStep(
        "specificity", specificity_step,
        reads=("splits", "rankings", "sweep_config", "metrics"), writes=("specificity",),
        config=_GEN, output=SpecificityOutput,
        wanted=lambda config: "specificity" in config.analyses,
    ),
    PipelineStep(
        "stability", stability_step, reads=("splits", "ks"), writes=("stability",),
        config=("analysis", "attribution", *_GEN), output=StabilityOutput,
        wanted=lambda config: "stability" in config.analyses,
    ),
    PipelineStep(
        "sufficiency", sufficiency_step,
        reads=("splits", "rankings", "sweep_config", "ks", "fmts"), writes=("sufficiency",),
        config=("analysis", "metrics", "ablation", "attribution", *_GEN),
        output=SufficiencyOutput,
        wanted=lambda config: config.sufficiency,
    ),
    PipelineStep(
        "report", report_step, writes=("index",), output=ReportOutput, wanted=_always, ranks=True
    ),
):  # fmt: skip
    STEPS.register(_step)


def planned(takes: Callable[[PipelineStep], bool]) -> list[str]:
    """The registered steps ``takes`` accepts, in registered order with ``report`` last (a step
    registered after the built-ins is still on the page)."""
    names = [s.name for s in STEPS.classes() if takes(s)]
    return [n for n in names if n != "report"] + ["report"]


def run_steps(
    exp: Experiment,
    record: RunRecord,
    names: list[str],
    start: float | None = None,
    on_step: Callable[[str], object] | None = None,
) -> dict[str, Any]:
    """Run the named steps in order; time each and rewrite the manifest after it. Each step is
    handed the artefacts it declares it reads, and what it returns is stored under the names it
    declares it writes (``record.artefacts``); ``made``: what each step returned, by step.

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
    with lifecycle.started(exp, record, names):  # "started" before any step; --force retires
        for i, name in enumerate(names):
            t = time.perf_counter()
            if on_step is not None:
                on_step(name)
            faults.point(f"step:{name}")
            step = STEPS.get(name)
            mine = replace(  # the step's view: its declared config sections, its own bar
                exp,
                config=StepConfig(exp.config, name, step.config),
                invocation=exp.invocation.for_step(name),
            )
            made[name] = step.run(mine, record.artefacts.inputs(name, step.reads), record)
            record.artefacts.put(outputs(name, step.writes, made[name]), name)
            written = exp.folder.step_outputs(name)
            record.manifest = lifecycle.note_outputs(record.manifest, exp.folder, written)
            if name in ("sweep", "report"):
                record.timings[name] = time.perf_counter() - t
            record.timings["total"] = time.perf_counter() - start
            record.note(steps=[*record.manifest.steps, name])
            lifecycle.finish_retiring(exp, record)
            record.write_manifest(exp, "complete" if i == len(names) - 1 else "running")
    return made


def task_hash(task: Task) -> str:
    blob = json.dumps([e.to_dict() for e in task], sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()
