"""Executors: where a sweep's masked generations run (this process, or workers on a Ray cluster).

The driver (``run_sweep``) plans the grid, computes each task's replacement values, looks up the
finished conditions in the resume store and hands the *pending* ones to an executor as
:class:`SweepUnit` objects: plain, picklable descriptions of one condition (prompts, heads,
ablation kind, values on the CPU, generation settings). The executor runs each unit with
:func:`run_unit` wherever its model lives and yields ``(unit, generations, seconds)`` as units
finish, in any order. The driver scores every answer (one :class:`~interp_heads.metrics.MetricCache`)
and writes each condition once with ``ConditionStore.put``, so the run folder, the resume keys and
the tables are those of a local run: an executor only decides where the generation happens.

``executor = "local"`` (the default) keeps today's path in ``run_sweep`` (including packed batches
on CUDA); :class:`LocalExecutor` runs units one by one in this process (the reference the Ray
executor is tested against); ``"ray"`` is :class:`interp_heads.ray_executor.RayExecutor`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from interp_heads.ablation import SCALE_FACTOR, AblationKind, HeadValues, mask_heads
from interp_heads.generation import generate
from interp_heads.heads import Head

EXECUTORS = ("local", "ray")


@dataclass
class TaskContext:
    """What every condition of one task shares: its rendered prompts and replacement values."""

    name: str
    prompts: list[str]
    values: HeadValues | list[HeadValues] | None = None


@dataclass
class SweepUnit:
    """One pending condition of a sweep: everything a worker needs to generate its answers.

    ``context`` is the task's :class:`TaskContext` (or, inside the Ray executor, a reference to
    it in the object store, so prompts and values travel once per task, not once per unit).
    """

    key: str  # the condition's file name in ``conditions/`` (``task__selection__k__seed``)
    resume_key: str
    context: TaskContext | object
    heads: list[Head]
    method: AblationKind | str
    max_new_tokens: int
    batch_size: int
    meta: dict = field(default_factory=dict)  # task, selection, k, seed, ids (for the driver)
    positions: str = "all"  # the mask's scope and scale factor (``mask_heads``)
    factor: float = SCALE_FACTOR
    stop_at_newline: bool = True  # False: free-form answers (``SweepConfig.free_form``)


@runtime_checkable
class Executor(Protocol):
    """Runs units somewhere and yields ``(unit, generations, generate_seconds)`` as they finish."""

    def run(self, units: Sequence[SweepUnit]) -> Iterator[tuple[SweepUnit, list[str], float]]: ...

    def close(self) -> None: ...


def values_to_cpu(values):
    """Replacement values (a dict of tensors, a list of them, or None) moved to the CPU."""
    if values is None:
        return None
    if isinstance(values, list):
        return [values_to_cpu(v) for v in values]
    return {layer: t.detach().to("cpu") for layer, t in values.items()}


def run_unit(model, unit: SweepUnit, context: TaskContext) -> tuple[list[str], float]:
    """Generate one unit's answers exactly as ``sweep._run_condition`` does; ``(outs, seconds)``."""
    t0 = time.perf_counter()
    with mask_heads(
        model,
        unit.heads,
        unit.method,
        values=context.values,
        positions=unit.positions,
        factor=unit.factor,
    ):
        outs = generate(
            model,
            context.prompts,
            unit.max_new_tokens,
            batch_size=unit.batch_size,
            stop_at_newline=unit.stop_at_newline,
        )
    return outs, time.perf_counter() - t0


class LocalExecutor:
    """Runs units one at a time on ``model`` in this process."""

    def __init__(self, model):
        self.model = model

    def run(self, units: Sequence[SweepUnit]) -> Iterator[tuple[SweepUnit, list[str], float]]:
        for unit in units:
            outs, seconds = run_unit(self.model, unit, unit.context)
            yield unit, outs, seconds

    def close(self) -> None:
        pass


class ExecutorError(ValueError):
    """A bad executor setting (unknown name, ray not installed...): one line."""


def check_executor(name: str) -> None:
    if name not in EXECUTORS:
        raise ExecutorError(f"unknown executor {name!r}; use one of {', '.join(EXECUTORS)}")


def make_executor(
    name: str,
    model_spec: str,
    *,
    device: str | None = None,
    n_workers: int | None = None,
    ray_address: str | None = None,
    n_devices: int = 1,
    fingerprint: dict | None = None,
):
    """The executor called ``name`` (None for ``"local"``: ``run_sweep``'s own in-process path).

    Args:
        model_spec: what each worker loads (``load_any_model(model_spec, device)``).
        device: the run's device (None: a GPU per worker when the cluster has GPUs, else CPU).
        n_workers: workers (actors) to start (None: one per GPU group, else one per CPU).
        ray_address: a cluster to join (None: ``RAY_ADDRESS`` if set, else a local instance).
        n_devices: GPUs per worker (a model split over the GPUs of one machine).
        fingerprint: the driver model's ``resume.model_fingerprint``; workers must match it.
    """
    check_executor(name)
    if name == "local":
        return None
    from interp_heads.ray_executor import RayExecutor

    return RayExecutor(
        model_spec,
        device=device,
        n_workers=n_workers,
        address=ray_address,
        n_devices=n_devices,
        fingerprint=fingerprint,
    )


@contextlib.contextmanager
def open_executor(settings, model):
    """The executor that ``settings`` (a ``RunConfig`` or the CLI's arguments) asks for, closed on
    exit; None for ``executor = "local"``. Its workers load ``settings.model``."""
    from interp_heads.resume import model_fingerprint

    name = getattr(settings, "executor", None) or "local"
    executor = make_executor(
        name,
        settings.model,
        device=settings.device,
        n_workers=getattr(settings, "n_workers", None),
        ray_address=getattr(settings, "ray_address", None),
        n_devices=getattr(settings, "n_devices", None) or 1,
        fingerprint=model_fingerprint(model) if name != "local" else None,
    )
    try:
        yield executor
    finally:
        if executor is not None:
            executor.close()


def run_with_executor(
    executor: Executor,
    tasks,
    plans,
    config,
    store,
    metrics,
    cache,
    prepare,
    *,
    batch_size,
    model,
    progress=False,
):
    """Hand every pending condition of a sweep to ``executor``; score and store them as they come.

    Mirrors ``packing.run_packed``: returns ``({condition key: payload}, {task: seconds})`` for the
    conditions run here; ``run_sweep``'s loop then only collects them in plan order.
    """
    from interp_heads.conditions import condition_payload as _condition_payload
    from interp_heads.conditions import pending_conditions

    contexts: dict[str, TaskContext] = {}  # one per task: prompts and values travel once
    units: list[SweepUnit] = []
    options = config.mask_options()
    for c in pending_conditions(model, tasks, plans, config.ablation, store, prepare, options):
        if c.task not in contexts:
            contexts[c.task] = TaskContext(c.task, list(c.prompts), values_to_cpu(c.values))
        units.append(
            SweepUnit(
                c.key,
                c.resume_key,
                contexts[c.task],
                c.heads,
                config.ablation,
                config.max_new_tokens,
                batch_size,
                c.meta,
                options["positions"],
                options["factor"],
                not config.free_form,
            )
        )
    finished: dict[str, dict] = {}
    seconds: dict[str, float] = {}
    from tqdm.auto import tqdm

    bar = tqdm(total=len(units), desc="sweep conditions", disable=not progress, leave=False)
    for unit, outs, t_gen in _once(executor.run(units)):
        m = unit.meta
        t0 = time.perf_counter() - t_gen
        done = _condition_payload(
            tasks[m["task"]], unit.heads, outs, metrics, cache, t_gen, t0, config.free_form
        )
        done.update({k: m[k] for k in ("task", "selection", "k", "seed", "ids")})
        done["resume_key"] = unit.resume_key
        store.put(unit.key, done)
        finished[unit.key] = done
        seconds[m["task"]] = seconds.get(m["task"], 0.0) + done["seconds"]["total"]
        bar.update(1)
    bar.close()
    missing = [u.key for u in units if u.key not in finished]
    if missing:
        raise RuntimeError(f"executor returned no result for {len(missing)} unit(s): {missing[:3]}")
    return finished, seconds


def _once(results: Iterable[tuple[SweepUnit, list[str], float]]):
    """Each unit's first result only: a retried unit can never be written twice."""
    seen: set[str] = set()
    for unit, outs, t in results:
        if unit.key not in seen:
            seen.add(unit.key)
            yield unit, outs, t
