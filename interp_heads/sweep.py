"""The ablation sweep: mask TopK or random heads while the model generates, score the answers.

For every task, the grid is ``k x selection x seed`` plus the unmasked baseline (``k = 0``).
Each condition masks its heads on ``hook_z`` (``interp_heads.ablation.mask_heads``), generates
greedy answers with the KV cache, and scores them with every metric. With ``out_dir`` each finished
condition is written atomically to ``out_dir/conditions/``, so an interrupted sweep resumes where
it stopped and ends with the same results as an uninterrupted one.
"""

from __future__ import annotations

import functools
import logging
import os
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import InitVar, asdict, dataclass, field
from typing import Literal

import pandas as pd

from interp_heads.ablation import SCALE_FACTOR, AblationKind, head_means, mask_heads
from interp_heads.conditions import ConditionStore
from interp_heads.conditions import collect_records as _collect
from interp_heads.conditions import condition_key as _condition_key
from interp_heads.conditions import condition_payload as _condition_payload
from interp_heads.errors import InputError
from interp_heads.generation import generate
from interp_heads.prompts import render
from interp_heads.resume import condition_key, model_fingerprint, rows_digest, tensor_digest
from interp_heads.runfolder import config_digest
from interp_heads.selection import make_selections
from interp_heads.stats import significance, summarize
from interp_heads.sweep_checks import SweepWarning, _check_mask_effect, _check_plan, _sanity
from interp_heads.vocab import MaskPositions

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
class SweepConfig:
    """Everything that determines a sweep's results (hashed for resume).

    ``ablation`` is the ablation kind (``mean``, ``zero``, ``resample``, ``scale``); ``method=`` is
    its deprecated name (before the vocabulary split: *method* is how heads are scored).
    ``positions`` is the mask's scope (``all`` or ``last``), ``scale`` the factor of the ``scale``
    kind (``interp_heads.ablation``). ``reference`` is what COMET, MiniLM and chrF score against
    (``gold`` or ``unmasked``: ``interp_heads.metrics.reference``); ``free_form`` generates
    without the first-line stop and scores whole answers.
    """

    ks: list[int]
    selections: list[str] = field(default_factory=lambda: ["topk", "randomk"])
    seeds: int = 5
    ablation: AblationKind | str = "mean"
    max_new_tokens: int = 8
    fmt: str | None = None  # None: each task's own format (built-in tasks: "plain")
    exclude_top: bool = False
    metrics: list[str] = field(default_factory=lambda: ["accuracy"])
    method: InitVar[str | None] = None
    positions: str = "all"
    scale: float = SCALE_FACTOR
    reference: str = "gold"
    free_form: bool = False
    elbow: bool = False  # also mask each task's elbow k (``interp_heads.elbow``)

    def __post_init__(self, method: str | None) -> None:
        if method is not None:
            warnings.warn(
                "SweepConfig(method=) is deprecated; use ablation=", DeprecationWarning, 2
            )
            self.ablation = method
        self.ablation = str(AblationKind.parse(self.ablation))
        self.positions = str(MaskPositions.parse(self.positions, "mask positions"))
        self.scale = float(self.scale)

    def mask_options(self) -> dict:
        """The ``mask_heads`` keywords beside the kind: ``positions`` and ``factor``."""
        return {"positions": self.positions, "factor": self.scale}

    def mask_key(self) -> dict | None:
        """The mask settings a resume key adds beside kind and values (None at the defaults)."""
        extra = {}
        if self.positions != "all":
            extra["positions"] = self.positions
        if self.ablation == "scale":
            extra["factor"] = self.scale
        return extra or None

    def to_dict(self) -> dict:
        """The fields, with the ablation kind under its old key ``method``: the digests of run
        folders made before the rename stay the same, so those folders keep resuming (for the
        same reason ``positions`` and ``scale`` are left out at their defaults)."""
        d = asdict(self)
        d["method"] = d.pop("ablation")
        if d["positions"] == "all":
            del d["positions"]
        if d["scale"] == SCALE_FACTOR:
            del d["scale"]
        for key, default in (("reference", "gold"), ("free_form", False), ("elbow", False)):
            if d[key] == default:
                del d[key]
        return d

    def digest(self) -> str:
        return config_digest(self.to_dict())


@dataclass
class SweepResult:
    """Per-example scores of every condition, with generations, plus the config."""

    records: pd.DataFrame  # task, selection, seed, k, metric, label, example_id, value
    generations: pd.DataFrame  # task, selection, seed, k, example_id, heads, generation
    config: SweepConfig
    timings: dict = field(default_factory=dict)
    metric_cache: dict = field(
        default_factory=dict
    )  # MetricCache.stats(): look-ups, scored, hit_rate

    def to_frame(self) -> pd.DataFrame:
        return self.records

    def summary(self, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
        """Mean and 95% CI per task, selection, k and metric (see ``interp_heads.stats``)."""
        return summarize(self.records, n_boot=n_boot, seed=seed)

    def significance(self, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
        """TopK minus each random control per task, k and metric: 95% CI and p-value."""
        return significance(self.records, n_boot=n_boot, seed=seed)

    def figure(self, **kwargs):
        from interp_heads.report.figures import plot_sweep

        return plot_sweep(self.summary(), **kwargs)

    def _repr_html_(self) -> str:
        """A notebook cell shows the summary table and the seed figure (``interp_heads.notebook``)."""
        from interp_heads.notebook import sweep_html

        return sweep_html(self)


# --------------------------------------------------------------------------- the sweep
def plan_conditions(
    config: SweepConfig, ranking, n_layers: int, n_heads: int, task: str, others=()
):
    """``[(selection_name, k, seed, heads)]`` for one task, baseline first (``others``: the other
    tasks' rankings, which ``exclusive_topk`` avoids)."""
    sels = make_selections(
        config.selections,
        ranking,
        n_layers,
        n_heads,
        salt=task,
        exclude_top=config.exclude_top,
        others=others,
    )
    plan = [("baseline", 0, 0, [])]
    ks = list(config.ks)
    if config.elbow:
        from interp_heads.elbow import elbow_k

        ks = sorted(set(ks) | {elbow_k(ranking)})
    for k in ks:
        if not 0 < k <= n_layers * n_heads:
            raise InputError(f"k={k} must be in 1..{n_layers * n_heads} (number of heads)")
        for sel in sels:
            for seed in range(config.seeds if sel.random else 1):
                plan.append((sel.name, k, seed, sel.select(k, seed)))
    return plan


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
    pack_rows: int | Literal["auto"] | None = None,
    executor=None,
) -> SweepResult:
    """Run the ``k x selection x seed`` grid (plus the baseline) on every task.

    Args:
        model: a HookedTransformer.
        tasks: ``{name: Task}`` or a list of Tasks (examples to evaluate; usually filtered to
            correctly answered ones and disjoint from those used for ranking).
        rankings: ``{task name: HeadScores or ordered list of heads}``.
        config: the grid, ablation kind and generation settings.
        metrics: metric objects (``name``, ``label``, ``score(items)``); default accuracy.
        batch_size: generation batch size.
        out_dir: write each finished condition there and resume from it.
        force: reuse ``out_dir`` even if it holds a different config (conditions whose inputs differ
            are recomputed; see ``interp_heads.resume``).
        progress: show a progress bar.
        pack_rows: rows per batch when rows of many conditions share batches
            (``interp_heads.packing``; same tokens as one condition at a time). ``None``: packed and
            sized from free memory on CUDA, one condition at a time elsewhere; ``"auto"``: packed
            everywhere (``batch_size`` rows off CUDA); ``0``: one condition at a time everywhere;
            an int: packed, that many rows.
        executor: where pending conditions generate (``interp_heads.executor``; e.g. a
            ``RayExecutor``); None: in this process (packed or not, per ``pack_rows``). Scoring and
            the resume store stay here either way.
    """
    from interp_heads.metrics import MetricCache, resolve_metrics
    from interp_heads.metrics.reference import with_reference
    from interp_heads.packing import run_packed
    from interp_heads.unmasked import attach_unmasked

    if not isinstance(tasks, Mapping):
        tasks = {t.name: t for t in tasks}
    metrics = list(metrics) if metrics is not None else resolve_metrics(config.metrics)
    metrics = with_reference(metrics, config.reference)
    if config.reference == "unmasked":
        tasks = attach_unmasked(model, tasks, config, batch_size, out_dir)
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
    total = sum(len(p) for p in plans.values())
    bar = _progress(total, progress)
    rows, gens, timings = [], [], {}
    planned: set[str] = set()
    fp = model_fingerprint(model)
    generation = {
        "max_new_tokens": config.max_new_tokens,
        "decoding": "greedy",
        "stop_at_newline": not config.free_form,
        "batch_size": batch_size,
    }
    prepared: dict[str, tuple] = {}

    def prepare(name, task):
        """``(prompts, ids, values, unit)`` of a task, computed once (the packed pass shares them)."""
        if name not in prepared:
            prompts = _task_prompts(model, task, config)
            # The replacement values' digest is part of every condition's resume key (interp_heads.resume).
            values = _ablation_values(model, prompts, config.ablation, batch_size)
            unit = {
                "model_fp": fp,
                "rows": rows_digest(task, prompts),
                "kind": config.ablation,
                "values_digest": tensor_digest(values),
                "generation": generation,
                "metrics": metrics,
                "mask": config.mask_key(),
            }
            prepared[name] = (prompts, [e.id for e in task], values, unit)
        return prepared[name]

    cache = MetricCache()  # each distinct (question, answer, reference) is scored once per metric
    if executor is not None:  # pending conditions run elsewhere; scored and stored here
        from interp_heads.executor import run_with_executor

        run_pending = functools.partial(run_with_executor, executor, model=model)
    else:  # packed in this process when packing is on, else left to the plain loop below
        run_pending = functools.partial(run_packed, model, pack_rows=pack_rows)
    packed, packed_seconds = run_pending(
        tasks,
        plans,
        config,
        store,
        metrics,
        cache,
        prepare,
        batch_size=batch_size,
        progress=progress,
    )
    for name, task in tasks.items():
        if len(task) == 0:
            raise InputError(f"task {name!r} has no examples to evaluate")
        t0 = time.perf_counter()
        prompts, ids, values, unit = prepare(name, task)
        plan = plans[name]
        _check_plan(plan, name)
        checked = False  # the mask-effect check runs once, when a condition has to run
        for sel_name, k, seed, heads in plan:
            key = _condition_key(name, sel_name, k, seed)
            resume_key = condition_key(heads=heads, **unit)
            done = packed.get(key) or store.get(key, resume_key)
            if done is None:
                if not checked:
                    _check_mask_effect(
                        model, name, prompts, plan, config.ablation, values, config.mask_options()
                    )
                    checked = True
                done = _run_condition(
                    model, task, prompts, heads, config, values, metrics, batch_size, cache
                )
                done.update(
                    task=name, selection=sel_name, k=k, seed=seed, ids=ids, resume_key=resume_key
                )
                store.put(key, done)
            planned.add(key)
            _collect(done, rows, gens)
            bar.update(1)
        timings[name] = time.perf_counter() - t0 + packed_seconds.get(name, 0.0)
    bar.close()
    store.prune(planned)  # the sweep is complete: entries of other configs are stale
    records = pd.DataFrame(rows)
    result = SweepResult(records, pd.DataFrame(gens), config, timings, cache.stats())
    _sanity(result)
    return result


def _task_prompts(model, task, config) -> list[str]:
    fmt = config.fmt or getattr(task, "fmt", None) or "auto"
    return render(model, [e.prompt for e in task], fmt=fmt)


def _ablation_values(model, prompts, method, batch_size):
    if method == "mean":
        return head_means(model, prompts, batch_size=batch_size)
    if method == "resample":
        return head_means(model, prompts, batch_size=batch_size, per_prompt=True)
    return None


def _run_condition(model, task, prompts, heads, config, values, metrics, batch_size, cache) -> dict:
    t0 = time.perf_counter()
    with mask_heads(model, heads, config.ablation, values=values, **config.mask_options()):
        outs = generate(
            model,
            prompts,
            config.max_new_tokens,
            batch_size=batch_size,
            stop_at_newline=not config.free_form,
        )
    t_gen = time.perf_counter() - t0
    return _condition_payload(task, heads, outs, metrics, cache, t_gen, t0, config.free_form)


def _progress(total: int, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="sweep conditions", disable=not enabled, leave=False)
