"""A run's whole plan, checked in one place before its folder is locked or changed.

``run``, ``attribute`` and ``ablate`` build their experiment through
``pipeline.experiment.build_experiment``, which loads the model and the tasks and then calls
:func:`check_plan` before ``RunFolder.claim``: every setting against the model (ranges such as
``refine``, ``exact_layers``, ``ks``), against the tasks (prompt lengths, corrupted prompts for
the method, a given ranking's task and model) and against each other, every metric's needs (the
logit metrics mask every position; ``logit_diff`` needs a distractor for every example) and every
step's inputs: one pass over the artefacts and config sections each step declares it reads
(:func:`check_step_inputs`), each made by the plan or by an earlier step. Then, still before the claim, ``build_experiment`` splits
each task's examples (``pipeline.baseline_step.split_examples``: a filter that keeps none is
refused there). A ``--force`` rerun refused here has not retired, locked or rewritten anything:
the earlier run stays byte-identical. A check a later step would raise on bad input belongs
here: ``tests/unit/pipeline/test_check_walk.py`` walks every raise of the step modules and
fails on one it cannot reach before the claim.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from interp_heads.config import validation
from interp_heads.config.run_config import RunConfig, check_ks
from interp_heads.errors import PipelineError, one_line
from interp_heads.pipeline.given_ranking import check_ks_fit, given_rankings


@dataclass
class Plan:
    """What the checks resolved, for the experiment: the k grid, the metrics, each task's prompt
    format (and how it was chosen), the given rankings and the sweep's settings."""

    ks: list[int]
    metrics: list
    fmts: dict[str, str]
    fmt_infos: dict[str, dict]
    given: dict = field(default_factory=dict)
    sweep_config: object = None


def check_plan(config: RunConfig, model, tasks: dict, steps: list[str], formats) -> Plan:
    """Check everything ``steps`` will need of ``config``, ``model`` and ``tasks``; what they
    resolve to. ``formats``: ``pipeline.experiment.task_formats`` (it may generate to measure).

    Raises:
        PipelineError: a bad input, with one line.
    """
    from interp_heads.metrics import MetricUnavailable

    check_step_inputs(config, steps)
    _check_for_model(config, model, tasks, steps)
    given = given_rankings(config, model, tasks)
    ks = config.resolved_ks(model.cfg.n_layers * model.cfg.n_heads) if "sweep" in steps else []
    if given and "sweep" in steps:
        check_ks_fit(ks, given, config)
    for task in tasks.values():  # before task_formats generates: the longest rendering
        validation.check_prompt_lengths(
            model, task, config.fmt or task.fmt, config.max_new_tokens, corrupted=task.has_corrupted
        )
    try:
        metrics, extra = _metrics(config, steps)
    except (MetricUnavailable, ValueError) as exc:
        raise PipelineError(one_line(exc)) from None
    fmts, fmt_infos = formats(config, model, tasks, given)
    sweep_config = config.sweep_config(ks, fmts)  # SweepConfig checks its own values
    if "attribute" in steps:
        _check_attribution_inputs(config, model, tasks, fmts)
    if "sweep" in steps:
        _check_sweep(sweep_config, model, tasks, fmts, metrics + extra)
        _check_scorable(metrics, fmts)
    return Plan(ks, metrics, fmts, fmt_infos, given, sweep_config)


def planned_artefacts(config: RunConfig, steps: list[str]) -> set[str]:
    """The artefacts the plan provides before the first step (``pipeline.artefacts.PLANNED``):
    a ranking only when the config gives one, the examples' split only when ``baseline`` runs."""
    from interp_heads.pipeline.artefacts import PLANNED

    out = set(PLANNED)
    if not config.given_ranking:
        out.discard("rankings")
    if "baseline" not in steps:
        out -= {"splits", "base_rows", "baseline_entries"}
    return out


def check_step_inputs(config: RunConfig, steps: list[str]) -> None:
    """Every step is registered, and every artefact and config section it reads is there when it
    runs (``pipeline.artefacts.check_reads``).

    Raises:
        PipelineError: an unknown step, or one whose input nothing provides, with one line.
    """
    from interp_heads.config.sections import SECTIONS
    from interp_heads.pipeline.artefacts import check_reads
    from interp_heads.pipeline.steps import STEPS

    declared = [STEPS.get(name) for name in steps]  # an unknown one: PipelineError
    check_reads(declared, planned_artefacts(config, steps), SECTIONS)


def _check_for_model(config: RunConfig, model, tasks: dict, steps: list[str]) -> None:
    """The settings whose valid range depends on the model or the tasks."""
    n_total = model.cfg.n_layers * model.cfg.n_heads
    if "stability" in steps and config.stability_ks:
        try:
            check_ks(config.stability_ks, n_total)
        except PipelineError as exc:
            raise PipelineError(f"stability_ks: {exc}") from None
    if "attribute" not in steps:
        return
    if config.refine is not None and config.refine > n_total:
        raise PipelineError(f"refine={config.refine} exceeds the number of heads ({n_total})")
    for name, task in tasks.items():
        config.method_options(has_corrupted=task.has_corrupted, task=name, model_cfg=model.cfg)


def _check_attribution_inputs(config: RunConfig, model, tasks: dict, fmts: dict) -> None:
    """The clean and corrupted prompts the attribution method reads, tokenised for every example
    (any may land in the rank split): a corrupted prompt of another token length, or a corrupted
    answer sharing the answer's first token, is refused here, not by the attribute step."""
    from interp_heads.attribution.inputs import make_batches
    from interp_heads.attribution.methods import resolve

    method = config.method_class()
    if method is not None and method.multi_task:
        return  # it ranks the tasks together from their activations (pipeline.probe_step)
    for name, task in tasks.items():
        method = resolve(str(config.attribution), task.has_corrupted)
        opts = config.method_options(has_corrupted=task.has_corrupted, task=name)
        if method.needs_corrupted(opts, task.has_corrupted):
            make_batches(model, task, batch_size=config.batch_size, fmt=fmts[name])


def _metrics(config: RunConfig, steps: list[str]) -> tuple[list, list]:
    """The sweep's metrics (only a sweep scores answers), and the kept-set curves' own."""
    from interp_heads.metrics import resolve_metrics

    if "sweep" not in steps:
        return [], []
    metrics = resolve_metrics([str(m) for m in config.metrics], **config.options("metrics"))
    names = {m.name for m in metrics}
    extra = [str(m) for m in config.sufficiency_metrics if str(m) not in names]
    extra = (
        resolve_metrics(extra, **config.options("metrics"))
        if "sufficiency" in steps and extra
        else []
    )
    return metrics, extra


def _check_sweep(sweep_config, model, tasks: dict, fmts: dict, metrics: list) -> None:
    """The sweep's own input checks, and what the logit metrics need of every example."""
    from interp_heads.metrics.logit_scores import answer_tokens
    from interp_heads.sweep.loop import check_inputs
    from interp_heads.tasks.prompts import render

    check_inputs(sweep_config, tasks, metrics)
    logit = [m for m in metrics if getattr(m, "per_condition", False)]
    if not logit:
        return
    for name, task in tasks.items():  # every example: any of them may be evaluated
        prompts = render(model, [e.prompt for e in task], fmt=fmts[name])
        answer_tokens(model, task, prompts, logit)


def _check_scorable(metrics: list, fmts: dict) -> None:
    """A metric that cannot score a task's answer format (``metrics.scorable``): refused when no
    metric of the run can score it, else marked with one warning line (its cells read
    "undecided" on the study pages)."""
    import warnings

    from interp_heads.metrics.scorable import blind_to

    blind: dict[str, list[str]] = {}
    for task, fmt in fmts.items():
        why = {m.name: blind_to(m, fmt) for m in metrics}
        if metrics and all(why.values()):
            raise PipelineError(f"task {task}: {next(iter(why.values()))}")
        for name, reason in why.items():
            if reason:
                blind.setdefault(f"{name}: {reason}", []).append(task)
    for said, names in blind.items():
        warnings.warn(f"{said} (tasks {', '.join(names)}: undecided)", UserWarning, stacklevel=2)
