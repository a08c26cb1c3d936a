"""The ablation sweep: mask TopK or random heads while the model generates, score the answers.

For every task, the grid is ``k x selection x seed`` plus the unmasked baseline (``k = 0``;
``sweep.plan``). :func:`run_sweep` is the one loop every executor goes through:

1. plan every task's conditions and prepare each task once (rendered prompts, the ablation
   kind's replacement values, the inputs of its conditions' resume keys);
2. read the resume store once: finished conditions are kept, the others are *pending*;
3. hand the pending conditions to the executor (``execution``: in process, packed, Ray...);
4. score each group the executor returns (one metric call per metric for the group's new
   answers, through one ``MetricCache``; the logit metrics, ``metrics.logits``, by one
   teacher-forced forward pass per condition in this process, whatever the executor) and store
   each condition atomically;
5. collect every condition in plan order into a :class:`~interp_heads.sweep.result.SweepResult`.

With ``out_dir`` each finished condition is a file in ``out_dir/conditions/``, so an interrupted
sweep resumes where it stopped and ends with the same results as an uninterrupted one.
"""

from __future__ import annotations

import itertools
import logging
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pandas as pd

from interp_heads.errors import InputError
from interp_heads.execution.base import Executor, SweepUnit, TaskContext
from interp_heads.store.conditions import ConditionStore, entry_name
from interp_heads.store.resume import condition_key, model_fingerprint, rows_digest, tensor_digest
from interp_heads.store.shared import SharedGenerations, open_shared
from interp_heads.sweep.checks import (
    SweepWarning,
    check_mask_effect,
    check_plan,
    check_results,
    check_verdict_counts,
)
from interp_heads.sweep.config import SweepConfig
from interp_heads.sweep.plan import plan_conditions
from interp_heads.sweep.records import collect_records, condition_payload, metric_items
from interp_heads.sweep.result import SweepResult
from interp_heads.sweep.shared import kind_values, remember, split_stored, task_values
from interp_heads.tasks.prompt_format import check_same_format, task_format
from interp_heads.tasks.prompts import render
from interp_heads.tasks.schema import filter_note

__all__ = [
    "ConditionStore",
    "SweepConfig",
    "SweepResult",
    "SweepWarning",
    "plan_conditions",
    "run_sweep",
]

log = logging.getLogger(__name__)


@dataclass
class SweepRun:
    """One sweep in progress: what every stage of :func:`run_sweep` reads and fills."""

    model: object
    tasks: dict
    config: SweepConfig
    metrics: list
    store: ConditionStore
    batch_size: int
    plans: dict = field(default_factory=dict)  # task -> [(selection, k, seed, heads)]
    contexts: dict = field(default_factory=dict)  # task -> TaskContext
    key_inputs: dict = field(default_factory=dict)  # task -> resume-key inputs of its conditions
    done: dict = field(default_factory=dict)  # entry name -> finished condition
    seconds: dict = field(default_factory=dict)  # task -> seconds spent on it here
    logit_inputs: dict = field(default_factory=dict)  # task -> metrics.logit_scores.LogitInputs
    shared: SharedGenerations | None = None  # generations shared with other runs (store.shared)
    shared_keys: dict = field(default_factory=dict)  # entry name -> key in ``shared``
    task_keys: dict = field(default_factory=dict)  # task -> sweep.shared.TaskKeys

    @property
    def logit_metrics(self) -> list:
        """The metrics scored from the masked model's logits, not from its answers."""
        return [m for m in self.metrics if getattr(m, "per_condition", False)]


def run_sweep(
    model,
    tasks: Mapping[str, object] | Sequence,
    rankings: Mapping[str, object],
    config: SweepConfig,
    metrics: Sequence | None = None,
    *,
    batch_size: int = 32,
    out_dir: str | os.PathLike | None = None,
    force: bool = False,
    progress: bool = True,
    executor: Executor | None = None,
    pack_rows=None,
    shared: SharedGenerations | str | os.PathLike | None = None,
) -> SweepResult:
    """Run the ``k x selection x seed`` grid (plus the baseline) on every task.

    Args:
        model: a HookedTransformer (or a bridge model, ``models.backends``).
        tasks: ``{name: Task}`` or a list of Tasks (examples to evaluate; usually filtered to
            correctly answered ones and disjoint from those used for ranking).
        rankings: ``{task name: HeadScores or ordered list of heads}``.
        config: the grid, ablation kind and generation settings.
        metrics: metric objects (``name``, ``label``, ``score(items)``); default: ``config.metrics``.
        batch_size: generation batch size.
        out_dir: write each finished condition there and resume from it.
        force: reuse ``out_dir`` even if it holds a different config (conditions whose inputs differ
            are recomputed; see ``interp_heads.store.resume``).
        progress: show a progress bar.
        executor: where pending conditions generate (``execution``; e.g. a ``RayExecutor``).
            None: this process, ``execution.local.LocalExecutor(model, pack_rows)``.
        pack_rows: the local executor's rows per packed batch (``execution.packed``: None packs
            on CUDA only, ``0`` never, ``"auto"`` or an int always).
        shared: a folder of generations shared with other runs (``store.shared``; a path or a
            ``SharedGenerations``): a condition found there is not generated, one generated here
            is written there. None: none.
    """
    from interp_heads.execution.local import LocalExecutor
    from interp_heads.metrics import MetricCache, resolve_metrics
    from interp_heads.metrics.reference import with_reference
    from interp_heads.sweep.unmasked import attach_unmasked

    if not isinstance(tasks, Mapping):
        tasks = {t.name: t for t in tasks}
    metrics = list(metrics) if metrics is not None else resolve_metrics(config.metrics)
    metrics = with_reference(metrics, config.reference)
    check_inputs(config, tasks, metrics)
    for name, task in tasks.items():
        fmt = task_format(model, task, config.fmt)  # a file declaring none: measured, as the CLI
        check_same_format(model, task, fmt, rankings.get(name), "run_sweep")
    check_verdict_counts(
        config.selections,
        config.seeds,
        {n: len(t) for n, t in tasks.items()},
        "raise seeds or add examples",
    )
    shared = open_shared(shared)
    if config.reference == "unmasked" or any(getattr(m, "needs_unmasked", 0) for m in metrics):
        tasks = attach_unmasked(model, tasks, config, batch_size, out_dir, shared)
    n_layers, n_heads = model.cfg.n_layers, model.cfg.n_heads
    plans = {
        name: plan_conditions(
            config,
            rankings[name],
            n_layers,
            n_heads,
            name,
            [r for other, r in rankings.items() if other != name],
        )
        for name in tasks
    }
    store = ConditionStore(out_dir, config, force)  # after planning: a bad grid writes nothing
    run = SweepRun(model, dict(tasks), config, metrics, store, batch_size, plans, shared=shared)
    run.seconds = dict.fromkeys(tasks, 0.0)  # seconds spent here on each task's conditions
    _prepare(run)
    pending = _pending(run)
    cache = MetricCache()  # each distinct (question, answer, reference) is scored once per metric
    executor = executor if executor is not None else LocalExecutor(model, pack_rows)
    _run_pending(run, executor, pending, cache, progress)
    store.prune(set(run.done))  # the sweep is complete: entries of other configs are stale
    rows, gens = [], []
    for name in tasks:
        for sel, k, seed, _ in plans[name]:
            collect_records(run.done[entry_name(name, sel, k, seed)], rows, gens)
    result = SweepResult(pd.DataFrame(rows), pd.DataFrame(gens), config, run.seconds, cache.stats())
    result.shared = shared.stats if shared is not None else None
    result.prompts = {  # what the model saw, for the report's generations table
        name: dict(zip([e.id for e in task], run.contexts[name].prompts, strict=True))
        for name, task in run.tasks.items()
    }
    check_results(result)
    return result


def check_inputs(config: SweepConfig, tasks: Mapping, metrics) -> None:
    """What a sweep refuses before its first forward pass (the pipeline checks it before a run
    folder is touched): an empty task, a task in the ``cognitive_mirrors`` format without the
    sweep's ``fmt`` saying so (its ``]`` stop and whole-text scoring are one setting per sweep,
    ``SweepConfig.json_answers``), a logit metric masking only the last position."""
    for name, task in tasks.items():
        if len(task) == 0:
            raise InputError(f"task {name!r} has no examples to evaluate{filter_note(task)}")
        if getattr(task, "fmt", None) == "cognitive_mirrors" and config.fmt is None:
            raise InputError(
                f"task {name!r} is in the cognitive_mirrors format: set the sweep's fmt to "
                "'cognitive_mirrors' (every task of the sweep must then be in it)"
            )
    if config.positions != "all" and any(getattr(m, "per_condition", 0) for m in metrics):
        raise InputError("the logit metrics need positions = 'all' (metrics.logits)")


def _prepare(run: SweepRun) -> None:
    """Each task's prompts, replacement values and resume-key inputs, computed once."""
    cfg, fp = run.config, model_fingerprint(run.model)
    generation = cfg.generation_key(run.batch_size)
    for name, task in run.tasks.items():
        fmt = cfg.fmt or getattr(task, "fmt", None) or "auto"
        prompts = render(run.model, [e.prompt for e in task], fmt=fmt)
        # the replacement values' digest is part of every condition's resume key
        if run.shared is None:
            values = kind_values(cfg, run.model, prompts, run.batch_size)
        else:  # computed once for every run sharing the store
            values, run.task_keys[name] = task_values(
                run.shared, run.model, prompts, cfg, run.batch_size
            )
        run.contexts[name] = TaskContext(name, prompts, values)
        if run.logit_metrics:
            from interp_heads.metrics.logit_scores import prepare

            run.logit_inputs[name] = prepare(
                run.model, task, prompts, run.logit_metrics, batch_size=run.batch_size
            )
        run.key_inputs[name] = {
            "model_fp": fp,
            "rows": rows_digest(task, prompts),
            "kind": cfg.ablation,
            "values_digest": tensor_digest(values),
            "generation": generation,
            "metrics": run.metrics,
            "mask": cfg.mask_key(),
        }


def _pending(run: SweepRun) -> list[SweepUnit]:
    """Finished conditions go to ``run.done`` (each entry read once); the others become units."""
    cfg, units = run.config, []
    kind = cfg.kind()
    for name, task in run.tasks.items():
        context, plan = run.contexts[name], run.plans[name]
        check_plan(plan, name)
        ids, checked = [e.id for e in task], False
        for sel, k, seed, heads in plan:
            key = entry_name(name, sel, k, seed)
            resume_key = condition_key(heads=heads, **run.key_inputs[name])
            done = run.store.get(key, resume_key)
            if done is not None:
                run.done[key] = done
                continue
            if not checked:  # once per task that has work
                check_mask_effect(
                    run.model, name, context.prompts, plan, kind, context.values, cfg.positions
                )
                checked = True
            meta = dict(task=name, selection=sel, k=k, seed=seed, ids=ids)
            if run.shared is not None:
                run.shared_keys[key] = run.task_keys[name].key(heads)
            units.append(
                SweepUnit(
                    key,
                    resume_key,
                    context,
                    list(heads),
                    kind,
                    cfg.generation(run.batch_size),
                    meta,
                    cfg.positions,
                )
            )
    return units


def _run_pending(run: SweepRun, executor, units: list[SweepUnit], cache, progress: bool) -> None:
    """Hand ``units`` to ``executor`` (but those the shared store holds); score and store each
    group as it comes back."""
    if not units:
        return
    free_form = run.config.free_form and not run.config.json_answers  # JSON answers: as generated
    bar = _progress(len(units), progress)
    found, rest = split_stored(run.shared, units, run.shared_keys)
    stored = {unit.key for unit, _, _ in found}
    for group in itertools.chain([found] if found else [], executor.run(rest) if rest else []):
        group = [(u, outs, t) for u, outs, t in group if u.key not in run.done]  # a retried unit
        remember(run.shared, [g for g in group if g[0].key not in stored], run.shared_keys)
        items = {
            u.key: metric_items(run.tasks[u.meta["task"]], outs, free_form) for u, outs, _ in group
        }
        for metric in run.metrics:  # one metric call per group for all its distinct new answers
            if not getattr(metric, "per_condition", False):
                cache.prime(metric, [it for its in items.values() for it in its])
        for unit, outs, t_gen in group:
            task, t0 = run.tasks[unit.meta["task"]], time.perf_counter() - t_gen
            logits = _logit_scores(run, unit)
            done = condition_payload(
                task, unit.heads, outs, run.metrics, cache, t_gen, t0, free_form, logits
            )
            done.update(unit.meta, resume_key=unit.resume_key)
            run.store.put(unit.key, done)
            run.done[unit.key] = done
            name = unit.meta["task"]
            run.seconds[name] += done["seconds"]["total"]
            bar.update(1)
    bar.close()
    missing = [u.key for u in units if u.key not in run.done]
    if missing:
        raise RuntimeError(f"executor returned no result for {len(missing)} unit(s): {missing[:3]}")


def _logit_scores(run: SweepRun, unit: SweepUnit) -> dict:
    """The logit metrics of one condition: one teacher-forced forward pass under its mask."""
    if not run.logit_metrics:
        return {}
    from interp_heads.metrics.logit_scores import score_condition

    name = unit.meta["task"]
    values = run.contexts[name].values  # this process's copy (a Ray unit holds a reference)
    inputs = run.logit_inputs[name]
    return score_condition(run.model, inputs, run.logit_metrics, unit.heads, unit.ablation, values)


def _progress(total: int, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="sweep conditions", disable=not enabled, leave=False)
