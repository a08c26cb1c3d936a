"""Summaries with 95% confidence intervals, and TopK against random controls.

For a TopK condition (one deterministic head set) the interval is a bootstrap over examples. For
random selections it is a two-level bootstrap: resample the random draws (seeds), then the
examples, so the interval reflects both which heads were drawn and which examples were asked.
Where a cell's metric is a proportion (``Metric.proportion``: every score 0 or 1, as accuracy),
the interval of one deterministic set is the exact Clopper-Pearson interval over its examples,
and that of random draws at least it (``sweep.exact.clopper_pearson`` of the per-example means
summed; the draws are asked the same examples, so the examples are the unit): 0 correct of 48
gets [0.00, 0.07], where the bootstrap alone, which cannot draw what never happened, gets
[0.00, 0.00].

TopK against a random control (:func:`paired_difference`): the difference, its p from
``sweep.exact.paired_test`` (the exact sign-flip test over examples and the prediction test of one
more draw over the draws: the draws are a random factor) and the interval that inverts that test,
the smallest difference the cell detects with 80% power (``mde``:
``sweep.inference.min_detectable``, formula there), and, over all rows of a run's table, Holm's
adjusted p (``p_holm``: the page's cells as one family), which is what decides
(``sweep.verdict``).

A verdict (:func:`verdict`) needs enough of both:

- :data:`MIN_EXAMPLES` = 10 evaluated examples. The exact paired sign-flip test over ``n``
  examples cannot give a two-sided p below ``2 ** (1 - n)``: 0.016 at n = 7, 0.002 at n = 10,
  which still clears a Bonferroni (or Holm) correction over a sweep's ~20 cells (4 k x 2 metrics
  x 2 controls: 0.05 / 20 = 0.0025).
- :data:`MIN_DRAWS` = 5 random draws. The prediction test over ``d`` draw means has ``d - 1``
  degrees of freedom; its critical value over the normal 1.96 is 6.5x at 2 draws, 2.2x at 3, 1.6x
  at 4 and 1.4x at 5: below 5 draws no cell of a page-sized family can be decided.

Below either, the tables say "undecided (n = 7; 10 needed)" instead of a p-value and a ``*``. A
drop ratio is never shown infinite: when the control did not drop, both drops are shown.
"""

from __future__ import annotations

from typing import SupportsInt

import numpy as np
import pandas as pd

from interp_heads.choices import BASELINE
from interp_heads.errors import InputError
from interp_heads.interventions.selections import AllButTopK, TopK, by_display, display_names
from interp_heads.sweep import inference


def two_level_bootstrap(
    values: np.ndarray, n_boot: int = 1000, seed: int = 0, alpha: float = 0.05
) -> tuple[float, float]:
    """Percentile CI of the grand mean of ``values[draw, example]``."""
    rng = np.random.default_rng(seed)
    n_draws, n_ex = values.shape
    d = rng.integers(0, n_draws, size=(n_boot, n_draws))
    e = rng.integers(0, n_ex, size=(n_boot, n_ex))
    means = values[d[:, :, None], e[:, None, :]].mean(axis=(1, 2))
    lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


def summarize(records: pd.DataFrame, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """One row per task, selection, k and metric: mean, 95% CI, per-draw means, counts."""
    out = []
    keys = ["task", "selection", "k", "metric"]
    for (task, sel, k, metric), grp in records.groupby(keys, sort=False):
        wide = grp.pivot_table(index="seed", columns="example_id", values="value", aggfunc="mean")
        values = wide.to_numpy(dtype=float)
        lo, hi = two_level_bootstrap(values, n_boot, seed)
        if proportion_metric(metric) and inference.is_proportion(values):  # exact coverage
            from interp_heads.sweep.exact import clopper_pearson

            n_ex = values.shape[1]  # the examples are the unit; the draws share them
            cp_lo, cp_hi = clopper_pearson(float(values.mean(axis=0).sum()), n_ex)
            lo, hi = (cp_lo, cp_hi) if values.shape[0] == 1 else (min(lo, cp_lo), max(hi, cp_hi))
        out.append(
            {
                "task": task,
                "selection": sel,
                "k": int(k),
                "metric": metric,
                "label": grp["label"].iloc[0],
                "mean": float(values.mean()),
                "ci_low": lo,
                "ci_high": hi,
                "draw_means": [float(v) for v in values.mean(axis=1)],
                "n_draws": int(values.shape[0]),
                "n_examples": int(values.shape[1]),
            }
        )
    frame = pd.DataFrame(out)
    if len(frame):
        base = frame[frame.selection == BASELINE].set_index(["task", "metric"])["mean"]
        frame["baseline"] = [
            base.get((t, m), np.nan) for t, m in zip(frame.task, frame.metric, strict=True)
        ]
        frame["drop"] = frame["baseline"] - frame["mean"]
    return frame


def proportion_metric(name: str) -> bool:
    """Whether the registered metric ``name`` scores each answer 0 or 1 (``Metric.proportion``)."""
    from interp_heads.metrics import METRICS

    try:
        return bool(getattr(METRICS.get(name), "proportion", False))
    except InputError:
        return False


def paired_bootstrap(
    top: np.ndarray, control: np.ndarray, n_boot: int = 2000, seed: int = 0, alpha: float = 0.05
) -> dict:
    """The pages' test before ``sweep.exact`` (kept so that ``analysis.calibration`` can measure
    the rule it served): the percentile interval of TopK minus the control over a bootstrap of
    examples (shared by both sides) and draws, and the exact sign-flip p over examples with the
    draws held fixed. 0 of 48 against 0 of 48 gets [0, 0] here; ``sweep.exact`` does not."""
    rng = np.random.default_rng(seed)
    n_draws, n_ex = control.shape
    d = rng.integers(0, n_draws, size=(n_boot, n_draws))
    e = rng.integers(0, n_ex, size=(n_boot, n_ex))
    diffs = top[e].mean(axis=1) - control[d[:, :, None], e[:, None, :]].mean(axis=(1, 2))
    lo, hi = np.quantile(diffs, [alpha / 2, 1 - alpha / 2])
    p = inference.sign_flip_p(top - control.mean(axis=0), seed)
    return {
        "diff": float(top.mean() - control.mean()),
        "diff_low": float(lo),
        "diff_high": float(hi),
        "p_value": p,
        "significant": bool((lo > 0 or hi < 0) and p < alpha),
    }


def paired_difference(
    top: np.ndarray, control: np.ndarray, n_boot: int = 2000, seed: int = 0, alpha: float = 0.05
) -> dict:
    """TopK minus a random control on the same examples: the difference, its interval and p from
    ``sweep.exact.paired_test`` (the draws a random factor; the interval inverts the same test,
    so 0 lies in it exactly when ``p >= alpha``), and the parts of that p (``p_examples``,
    ``p_draws``, ``p_box``).

    ``top[example]`` holds one deterministic condition, ``control[draw, example]`` the random
    draws, both over the same examples in the same order. ``significant``: ``p < alpha`` (raw: a
    verdict reads the Holm-adjusted p, ``sweep.verdict``). ``mde``: the smallest mean difference
    detectable with 80% power (``sweep.inference.min_detectable``). ``n_boot`` and ``seed`` are
    kept for callers of the bootstrap this replaced; the exact test does not resample.
    """
    from interp_heads.sweep.exact import paired_test

    del n_boot
    top, control = np.asarray(top, dtype=float), np.asarray(control, dtype=float)
    res = paired_test(top, control, alpha)
    unit = bool(np.all((top >= 0) & (top <= 1)) and np.all((control >= 0) & (control <= 1)))
    per_example = top - control.mean(axis=0)
    return {
        "diff": res["diff"],
        "diff_low": res["diff_low"],
        "diff_high": res["diff_high"],
        "p_value": res["p_value"],
        "significant": bool(res["p_value"] < alpha),
        "mde": inference.min_detectable(per_example, unit, alpha),
        "p_examples": res["p_examples"],
        "p_draws": res["p_draws"],
        "p_box": res["p_box"],
    }


MIN_EXAMPLES = 10  # evaluated examples for a verdict (module docstring: why)
MIN_DRAWS = 5  # random draws for a verdict


def significance(
    records: pd.DataFrame, n_boot: int = 2000, seed: int = 0, top: str | None = None
) -> pd.DataFrame:
    """One row per task, k, metric and random control: TopK minus the control, CI, p-value.

    Also the drops from the unmasked score (``top_drop``, ``control_drop``) and their ratio, the
    number the Cognitive Mirrors figure's claim is about ("TopK drops the task >= 3x more than RandomK").

    ``top``: the deterministic selection compared (None: TopK, and AllButTopK when the records
    have it). Its controls are the random selections that count k the same way (masked or kept,
    ``Selection.kept``): TopK against RandomK and LayerMatchedRandomK, AllButTopK against
    AllButRandomK (the column ``control`` tells the pairs apart).
    """
    tops = [top] if top else [TopK.display, AllButTopK.display]
    frames = [_significance(records, n_boot, seed, t) for t in tops]
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame()
    out = pd.concat(frames, ignore_index=True)
    for col in ("mde", "p_examples", "p_draws", "p_box"):  # new columns last: stored tables
        out[col] = out.pop(col)  # keep their column order
    out["p_holm"] = inference.holm(out["p_value"])  # the rows of the run's page: one family
    return out


def _significance(records: pd.DataFrame, n_boot: int, seed: int, top: str) -> pd.DataFrame:
    """:func:`significance` for one deterministic selection ``top``."""
    cls = by_display(top)
    kept = bool(cls and cls.kept)
    out = []
    base = (
        records[records.selection == BASELINE].groupby(["task", "metric"])["value"].mean()
        if len(records)
        else pd.Series(dtype=float)
    )
    for (task, k, metric), grp in records[records.selection != BASELINE].groupby(
        ["task", "k", "metric"], sort=False
    ):
        t = grp[grp.selection == top]
        if t.empty:
            continue
        t_vals = t.groupby("example_id")["value"].mean()
        randoms = display_names(random=True, kept=kept)
        controls = grp[grp.selection.isin(randoms) & (grp.selection != top)]
        for control, c in controls.groupby("selection", sort=False):
            wide = c.pivot_table(index="seed", columns="example_id", values="value", aggfunc="mean")
            ids = [i for i in wide.columns if i in t_vals.index]
            if not ids:
                continue
            res = paired_difference(
                t_vals[ids].to_numpy(float), wide[ids].to_numpy(float), n_boot, seed
            )
            b = float(base.get((task, metric), np.nan))
            top_drop, control_drop = (
                b - float(t_vals[ids].mean()),
                b - float(wide[ids].to_numpy(float).mean()),
            )
            out.append(
                {
                    "task": task,
                    "k": int(k),
                    "metric": metric,
                    "label": grp["label"].iloc[0],
                    "control": control,
                    "top_mean": float(t_vals[ids].mean()),
                    "control_mean": float(wide[ids].to_numpy(float).mean()),
                    **res,
                    "baseline": b,
                    "top_drop": top_drop,
                    "control_drop": control_drop,
                    "drop_ratio": top_drop / control_drop
                    if control_drop > 0
                    else np.inf
                    if top_drop > 0
                    else np.nan,
                    "n_examples": len(ids),
                    "n_draws": int(wide.shape[0]),
                }
            )
    return pd.DataFrame(out)


def too_few(
    n_examples: SupportsInt, n_draws: SupportsInt, min_examples: int = MIN_EXAMPLES
) -> str | None:
    """Why TopK against a random control cannot be decided at these counts (None: it can)."""
    if int(n_examples) < min_examples:
        return f"undecided (n = {int(n_examples)}; {min_examples} needed)"
    if int(n_draws) < MIN_DRAWS:
        d = int(n_draws)
        return f"undecided ({d} random draw{'s' * (d != 1)}; {MIN_DRAWS} needed)"
    return None


def shortfall(n_examples: SupportsInt, n_draws: SupportsInt) -> str | None:
    """What is too few for any TopK vs random verdict, both counts named: ``"3 random draws (5
    needed)"``; None when both suffice (checked before a sweep, where ``too_few`` is after)."""
    short = [
        f"{int(n)} {what}{'s' * (int(n) != 1)} ({need} needed)"
        for n, need, what in ((n_examples, MIN_EXAMPLES, "example"), (n_draws, MIN_DRAWS, "random draw"))
        if int(n) < need
    ]  # fmt: skip
    return " and ".join(short) or None


def _holm_p(row) -> float:
    p = getattr(row, "p_holm", None)
    return float(row.p_value) if p is None or p != p else float(p)


def decided(row) -> bool:
    """Whether a row of :func:`significance` differs from its control by the Holm-adjusted p
    (``p_holm``; the raw p for rows without it) *and* has enough examples and draws."""
    return _holm_p(row) < 0.05 and too_few(row.n_examples, row.n_draws) is None


def verdict(row) -> str:
    """One line a reader cannot misread, for a row of :func:`significance` (Holm decides)."""
    why = too_few(row.n_examples, row.n_draws)
    if why:
        return why
    p = _holm_p(row)
    if p >= 0.05:
        return f"no difference shown (Holm p = {format_p(p)} >= 0.05)"
    diff = row["diff"] if isinstance(row, pd.Series) else row.diff  # Series.diff is a method
    side = "below" if diff < 0 else "above"
    return f"TopK {side} {row.control} (Holm p = {format_p(p)})"


def format_p(p: float) -> str:
    """A p-value for a table: ``< 0.001`` below 0.001, else 3 decimals."""
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def drops_text(top_drop: float, control_drop: float) -> str:
    """TopK's drop over the control's as ``"4.7x"``; both drops when the ratio is not finite
    (the control did not drop): ``"0.50 vs 0.00"``."""
    if control_drop > 0 and np.isfinite(top_drop):
        return f"{top_drop / control_drop:.1f}x"
    if top_drop != top_drop or control_drop != control_drop:
        return ""
    return f"{top_drop:.2f} vs {control_drop:.2f}"
