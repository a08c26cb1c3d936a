"""How many heads a task needs: kept-set curves, faithfulness, CPR, CMD and minimal head sets.

Everything here is computed from a sweep's records (``sweep.loop.run_sweep`` with the
selections :data:`SELECTIONS` on the :func:`kept_grid`); nothing runs a model.

- **Faithfulness** of a kept set C (MIB's circuit track, Mueller et al. 2025):
  ``f = (m(C) - m(empty)) / (m(N) - m(empty))``, where m is a metric's mean over the examples
  with only C kept (every other head ablated), N the unmasked model (the sweep's baseline) and
  empty every head ablated (AllButTopK at k = 0). A kept set of every head masks nothing, so
  f = 1 there exactly, and f = 0 exactly at k = 0. A random kept set's f is the mean over its
  draws of each draw's f. Intervals: a bootstrap over examples (paired: the same resampled
  examples for C, N and empty), and over draws for the random sets.
- **CPR** (higher is better): the area under f over MIB's kept fractions :data:`MIB_FRACTIONS`
  (trapezoids, linear axis), each fraction rounded to whole heads; **CMD** (lower is better):
  the area of ``|1 - f|`` over the same axis (``MIB-circuit-track``, ``evaluation.py``:
  ``evaluate_area_under_curve``, which takes ``int(fraction * n)`` heads where this rounds).
- **Necessity area** (lower is better): the same normalisation of the TopK *masked* curve,
  ``g = (m(N minus TopK) - m(empty)) / (m(N) - m(empty))``, its area over the masked fractions.
- **Minimal head set**: the smallest kept k of the grid at which the kept set's accuracy reaches
  :data:`THRESHOLD` (90%) of the unmasked accuracy, with a bootstrap interval (the grid's k values
  its replicates land on). Keeping every head masks nothing, so that k always reaches it: a
  minimal k of every head is the fallback, not a set found (``found`` False; ``tested``: the
  largest kept k below every head that was tried).

When ``m(N) = m(empty)`` (masking every head changes nothing the metric sees) f is undefined and
shown as NaN.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from interp_heads.choices import BASELINE
from interp_heads.interventions.selections import AllButRandomK, AllButTopK, TopK

MIB_FRACTIONS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
FINE_FRACTIONS = (0.6, 0.75, 0.9)  # the kept grid's top, where MIB's jumps from 50% to 100%
THRESHOLD = 0.9  # a minimal head set keeps this share of the unmasked accuracy
SELECTIONS = ("topk", "all_but_topk", "all_but_randomk")  # what a sufficiency sweep masks
CURVES = {AllButTopK.display: "ranking", AllButRandomK.display: "random", TopK.display: "necessity"}
NECESSARY = 0.5  # TopK is necessary at k when masking it leaves at most this share of the gap


def mib_ks(n_total: int) -> list[int]:
    """The kept head counts of :data:`MIB_FRACTIONS` (rounded half up, duplicates kept)."""
    return [int(math.floor(f * n_total + 0.5)) for f in MIB_FRACTIONS]


def kept_grid(n_total: int, ks: Sequence[int] = (), grid: str = "mib") -> list[int]:
    """The sufficiency sweep's k: 0 (every head ablated), the MIB counts, a finer top
    (:data:`FINE_FRACTIONS`, rounded half up) and the run's ``ks``; with ``grid="ks"`` only 0,
    the run's ``ks`` and every head (the verdicts at ks, without the curves' area or minimal k
    between them)."""
    own = {int(k) for k in ks if 0 <= int(k) <= n_total}
    if grid == "ks":
        return sorted({0, *own, n_total})
    fine = (int(math.floor(f * n_total + 0.5)) for f in FINE_FRACTIONS)
    return sorted({0, *mib_ks(n_total), *fine, *own})


class _Cells:
    """One task's and metric's per-example values per condition, examples in one order."""

    def __init__(self, rows: pd.DataFrame):
        self.wide = rows.pivot_table(
            index=["selection", "k", "seed"], columns="example_id", values="value", aggfunc="mean"
        )
        self.n = self.wide.shape[1]

    def get(self, selection: str, k: int) -> np.ndarray | None:
        """``[draw, example]`` values of a condition (None: not in the records)."""
        try:
            block = self.wide.xs((selection, k), level=("selection", "k"))
        except KeyError:
            return None
        return block.to_numpy(dtype=float)


def _row_means(values: np.ndarray) -> np.ndarray:
    """Each draw's mean over its examples, row by row (equal rows: equal means, bit for bit)."""
    return np.array([row.mean() for row in values])


def _f(c, full, empty):
    """Faithfulness, elementwise; NaN where the full and empty models score the same."""
    gap = full - empty
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(gap != 0, (c - empty) / np.where(gap != 0, gap, 1.0), np.nan)


class _Boot:
    """Bootstrap replicates of example and draw indices, shared by every condition of a cell."""

    def __init__(self, n_examples: int, n_boot: int, seed: int):
        self.rng = np.random.default_rng(seed)
        self.e = self.rng.integers(0, n_examples, size=(n_boot, n_examples))
        self.n_boot = n_boot
        self._draws: dict[int, np.ndarray] = {}

    def means(self, values: np.ndarray) -> np.ndarray:
        """``[draw, replicate]`` means over each replicate's examples (row by row, so that equal
        rows give equal means to the last bit)."""
        return np.stack([row[self.e].mean(axis=-1) for row in values])

    def draws(self, n_draws: int) -> np.ndarray:
        if n_draws not in self._draws:
            self._draws[n_draws] = self.rng.integers(0, n_draws, size=(self.n_boot, n_draws))
        return self._draws[n_draws]


def _curve_point(values, full, empty, boot: _Boot) -> tuple[float, np.ndarray]:
    """f of a condition (mean of its draws' f) and its bootstrap replicates."""
    # every mean taken the same way (per draw, over its examples): a kept set equal to N or to
    # empty then gives f = 1 or f = 0 exactly
    point = float(np.mean(_f(_row_means(values), _row_means(full)[0], _row_means(empty)[0])))
    per_draw = _f(boot.means(values), boot.means(full)[0], boot.means(empty)[0])  # [draw, B]
    if values.shape[0] == 1:
        return point, per_draw[0]
    d = boot.draws(values.shape[0])
    return point, np.take_along_axis(per_draw.T, d, axis=1).mean(axis=1)


def faithfulness_curves(
    records: pd.DataFrame, n_total: int, run_ks: Sequence[int] = (), n_boot: int = 1000,
    seed: int = 0,
) -> tuple[pd.DataFrame, dict]:  # fmt: skip
    """One row per task, metric, curve and k: f with its 95% interval, and the metric's mean.

    ``curve`` is ``ranking`` (AllButTopK), ``random`` (AllButRandomK) or ``necessity`` (TopK
    masked; k counts masked heads there). Also returns the bootstrap replicates
    ``{(task, metric, curve): {k: replicates}}`` the areas' intervals are built from.
    """
    rows, reps = [], {}
    for (task, metric), grp in records.groupby(["task", "metric"], sort=False):
        cells = _Cells(grp)
        full, empty = cells.get(BASELINE, 0), cells.get(AllButTopK.display, 0)
        if full is None or empty is None:
            continue
        boot = _Boot(cells.n, n_boot, seed)
        for selection, curve in CURVES.items():
            ks = sorted({int(k) for s, k, _ in cells.wide.index if s == selection})
            if curve == "necessity" and ks:
                ks = [0, *ks]  # masking no head: the unmasked model
            for k in ks:
                values = full if curve == "necessity" and k == 0 else cells.get(selection, k)
                point, rep = _curve_point(values, full, empty, boot)
                reps.setdefault((task, metric, curve), {})[k] = rep
                lo, hi = _interval(rep)
                rows.append({
                    "task": task, "metric": metric, "label": grp["label"].iloc[0],
                    "curve": curve, "selection": selection, "k": k, "fraction": k / n_total,
                    "f": point, "f_low": lo, "f_high": hi, "mean": float(values.mean()),
                    "full": float(full.mean()), "empty": float(empty.mean()),
                    "n_draws": values.shape[0], "n_examples": cells.n, "run_k": k in run_ks,
                })  # fmt: skip
    return pd.DataFrame(rows), reps


def _interval(rep: np.ndarray) -> tuple[float, float]:
    rep = rep[np.isfinite(rep)]
    if not len(rep):
        return math.nan, math.nan
    lo, hi = np.quantile(rep, [0.025, 0.975])
    return float(lo), float(hi)


def mib_area(f_at: dict, n_total: int, from_one: bool = False):
    """The trapezoid area over :data:`MIB_FRACTIONS` of f (``|1 - f|`` with ``from_one``), f
    read at each fraction's rounded k (``f_at[k]``: a number or an array of replicates)."""
    ys = [f_at[k] for k in mib_ks(n_total)]
    if from_one:
        ys = [np.abs(1.0 - y) for y in ys]
    xs = MIB_FRACTIONS
    return sum((xs[i + 1] - xs[i]) * (ys[i] + ys[i + 1]) / 2 for i in range(len(xs) - 1))


def areas(curves: pd.DataFrame, reps: dict, n_total: int) -> pd.DataFrame:
    """One row per task, metric and curve: CPR and CMD (ranking, random) or the necessity area,
    each with a 95% bootstrap interval."""
    rows = []
    for (task, metric, curve), grp in curves.groupby(["task", "metric", "curve"], sort=False):
        f_at = dict(zip(grp.k, grp.f, strict=True))
        if not set(mib_ks(n_total)) <= set(f_at):
            continue  # not a sufficiency grid
        rep = reps[(task, metric, curve)]
        kinds = ["necessity_area"] if curve == "necessity" else ["cpr", "cmd"]
        for kind in kinds:
            one = kind == "cmd"
            lo, hi = _interval(np.asarray(mib_area(rep, n_total, one)))
            rows.append({
                "task": task, "metric": metric, "curve": curve, "measure": kind,
                "value": float(mib_area(f_at, n_total, one)), "low": lo, "high": hi,
            })  # fmt: skip
    return pd.DataFrame(rows)


def _replicate_means(values: np.ndarray, boot: _Boot) -> np.ndarray:
    """``[replicate]`` means of a condition: examples resampled, and draws for a random one."""
    per_draw = boot.means(values)
    if values.shape[0] == 1:
        return per_draw[0]
    return np.take_along_axis(per_draw.T, boot.draws(values.shape[0]), axis=1).mean(axis=1)


def _first_reaching(ks: list[int], means: np.ndarray, target) -> np.ndarray:
    """The first k whose mean reaches ``target`` (along axis 0; NaN where none does)."""
    ok = means >= target
    first = np.where(ok.any(axis=0), ok.argmax(axis=0), -1)
    return np.where(first >= 0, np.asarray(ks, dtype=float)[first], np.nan)


def minimal_sets(
    records: pd.DataFrame, metric: str = "accuracy", rankings: dict | None = None,
    n_boot: int = 1000, seed: int = 0, n_total: int | None = None,
) -> pd.DataFrame:  # fmt: skip
    """Per task, for the ranking's kept sets and the random ones: the smallest kept k of the
    grid whose mean ``metric`` reaches :data:`THRESHOLD` of the unmasked model's, with a 95%
    bootstrap interval. ``found`` is False when only every head (``n_total``; None: the grid's
    largest k) reached it, ``tested`` the largest k below it that was tried, ``n_examples`` the
    examples. ``rankings``: ``{task: heads, most important first}``, to name a found set."""
    rows = []
    for task, grp in records[records.metric == metric].groupby("task", sort=False):
        cells = _Cells(grp)
        full = cells.get(BASELINE, 0)
        if full is None:
            continue
        boot = _Boot(cells.n, n_boot, seed)
        target, target_rep = THRESHOLD * full.mean(), THRESHOLD * boot.means(full)[0]
        for selection in (AllButTopK.display, AllButRandomK.display):
            ks = sorted({int(k) for s, k, _ in cells.wide.index if s == selection})
            if not ks or target <= 0:
                continue
            conds = [cells.get(selection, k) for k in ks]
            point = _first_reaching(ks, np.array([c.mean() for c in conds]), target)
            reps = _first_reaching(ks, np.stack([_replicate_means(c, boot) for c in conds]),
                                   target_rep)  # fmt: skip
            reps = reps[np.isfinite(reps)]
            lo, hi = np.quantile(reps, [0.025, 0.975], method="inverted_cdf") if len(reps) else (
                math.nan, math.nan)  # fmt: skip
            k, every = float(point), n_total if n_total is not None else ks[-1]
            found, heads = k == k and k < every, ""
            if selection == AllButTopK.display and rankings and task in rankings and found:
                heads = ",".join(f"L{la}H{h}" for la, h in list(rankings[task])[: int(k)])
            rows.append({
                "task": task, "metric": metric, "curve": CURVES[selection], "minimal_k": k,
                "low": float(lo), "high": float(hi), "unmasked": float(full.mean()),
                "threshold": float(target), "heads": heads, "found": found, "n_examples": cells.n,
                "tested": max((g for g in ks if g < every), default=0),
            })  # fmt: skip
    return pd.DataFrame(rows)


def verdicts(curves: pd.DataFrame, metric: str = "accuracy") -> pd.DataFrame:
    """Per task, at the run's largest k: whether the TopK heads are necessary (masking them
    leaves at most :data:`NECESSARY` of the gap between the all-masked and the unmasked model)
    and sufficient (keeping only them reaches :data:`THRESHOLD` of the unmasked score), with one
    plain sentence each."""
    rows = []
    c = curves[(curves.metric == metric) & curves.run_k.astype(bool)]
    for task, grp in c.groupby("task", sort=False):
        rank, nec = grp[grp.curve == "ranking"], grp[grp.curve == "necessity"]
        ks = sorted(set(rank.k) & set(nec.k))
        if not ks:
            continue
        k = ks[-1]
        kept, masked = rank[rank.k == k].iloc[0], nec[nec.k == k].iloc[0]
        necessary = bool(masked.f <= NECESSARY)
        decided = bool(kept["full"] > kept["empty"])
        necessary = necessary and decided
        sufficient = decided and bool(kept["mean"] >= THRESHOLD * kept["full"])
        rows.append({
            "task": task, "k": int(k), "necessary": necessary, "sufficient": sufficient,
            "masked_f": float(masked.f), "kept_f": float(kept.f), "kept_mean": float(kept["mean"]),
            "unmasked": float(kept.full), "sentence": _sentence(task, k, masked, kept, necessary,
                                                                sufficient),
        })  # fmt: skip
    return pd.DataFrame(rows)


def _sentence(task, k, masked, kept, necessary: bool, sufficient: bool) -> str:
    full, empty = kept["full"], kept["empty"]  # (Series.empty is a property)
    if not full > empty:
        return (
            f"{task}, k = {k}: undecided: the unmasked model ({full:.2f}) does not score "
            f"above the all-ablated one ({empty:.2f}), so no head set can be necessary or "
            "sufficient for it."
        )
    share = f"{kept['mean'] / kept.full:.0%}" if kept.full > 0 else "n/a"
    keep = (
        f"keeping only them (every other head ablated) gives {kept['mean']:.2f}, {share} of the "
        f"unmasked {kept.full:.2f} ({THRESHOLD:.0%} needed)"
    )
    gap = f"masking them leaves f = {masked.f:.2f} of the gap to the all-masked model"
    if necessary:
        verb = "are also sufficient" if sufficient else "are not also sufficient"
        return f"{task}, k = {k}: the TopK heads that are necessary ({gap}) {verb}: {keep}."
    suff = "sufficient" if sufficient else "not sufficient either"
    return f"{task}, k = {k}: the TopK heads are not necessary ({gap}) and are {suff}: {keep}."
