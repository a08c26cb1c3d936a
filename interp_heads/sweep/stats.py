"""Summaries with 95% confidence intervals, and TopK against random controls.

For a TopK condition (one deterministic head set) the interval is a bootstrap over examples. For
random selections it is a two-level bootstrap: resample the random draws (seeds), then the
examples, so the interval reflects both which heads were drawn and which examples were asked.
Where a cell's metric is a proportion (``Metric.proportion``: every score 0 or 1, as accuracy),
the interval is also at least the Wilson score interval of its mean over its examples
(``sweep.inference``; the draws are asked the same examples, so they count once): 0 correct of
48 gets [0.00, 0.07], where the bootstrap alone, which cannot draw what never happened, gets
[0.00, 0.00].

TopK against a random control (:func:`paired_difference`): the difference with a paired bootstrap
interval, the p-value of the exact paired sign-flip test over examples (each example's TopK value
minus its mean over the draws; ``sweep.inference.sign_flip_p``), the smallest difference the
cell detects with 80% power (``mde``: ``sweep.inference.min_detectable``, formula there), and,
over all rows of a run's table, Holm's adjusted p (``p_holm``: the page's cells as one family).

A verdict (:func:`verdict`) needs enough of both:

- :data:`MIN_EXAMPLES` = 10 evaluated examples. The exact paired sign-flip test over ``n``
  examples cannot give a two-sided p below ``2 ** (1 - n)``: 0.016 at n = 7, 0.002 at n = 10,
  which still clears a Bonferroni (or Holm) correction over a sweep's ~20 cells (4 k x 2 metrics
  x 2 controls: 0.05 / 20 = 0.0025).
- :data:`MIN_DRAWS` = 5 random draws. A t interval over ``d`` draw means has ``d - 1`` degrees of
  freedom; its critical value over the normal 1.96 the bootstrap's percentile interval behaves
  like is 6.5x at 2 draws, 2.2x at 3, 1.6x at 4 and 1.4x at 5: below 5 draws the interval
  understates how much another draw of random heads could differ (nothing widens it: the
  verdict waits for 5 draws instead).

Below either, the tables say "too few examples to decide (n = 7)" instead of a p-value and a
``*``. A drop ratio is never shown infinite: when the control did not drop, both drops are shown.
"""

from __future__ import annotations

from typing import SupportsInt

import numpy as np
import pandas as pd

from interp_heads.errors import InputError
from interp_heads.interventions.selections import AllButTopK, TopK, by_display, display_names
from interp_heads.sweep import inference
from interp_heads.vocab import BASELINE


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
            w_lo, w_hi = inference.wilson_interval(float(values.mean()), values.shape[1])
            lo, hi = min(lo, w_lo), max(hi, w_hi)
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


def paired_difference(
    top: np.ndarray, control: np.ndarray, n_boot: int = 2000, seed: int = 0, alpha: float = 0.05
) -> dict:
    """TopK minus a random control on the same examples, with a 95% CI and a two-sided p-value.

    ``top[example]`` holds one deterministic condition, ``control[draw, example]`` the random
    draws, both over the same examples in the same order. Each bootstrap replicate resamples the
    examples (shared by both sides: the comparison is paired) and the draws; the interval is the
    percentile interval of the replicated differences. The p-value is the exact two-sided paired
    sign-flip test of the per-example differences ``top[e] - mean(control[:, e])``
    (``sweep.inference.sign_flip_p``; the null: each example's difference is symmetric about 0).
    The cell is significant at level ``alpha`` when the interval excludes 0 and ``p < alpha``.
    ``mde``: the smallest mean difference detectable with 80% power
    (``sweep.inference.min_detectable``).
    """
    rng = np.random.default_rng(seed)
    n_draws, n_ex = control.shape
    d = rng.integers(0, n_draws, size=(n_boot, n_draws))
    e = rng.integers(0, n_ex, size=(n_boot, n_ex))
    diffs = top[e].mean(axis=1) - control[d[:, :, None], e[:, None, :]].mean(axis=(1, 2))
    lo, hi = np.quantile(diffs, [alpha / 2, 1 - alpha / 2])
    per_example = top - control.mean(axis=0)
    p = inference.sign_flip_p(per_example, seed)
    unit = bool(np.all((top >= 0) & (top <= 1)) and np.all((control >= 0) & (control <= 1)))
    return {
        "diff": float(top.mean() - control.mean()),
        "diff_low": float(lo),
        "diff_high": float(hi),
        "p_value": p,
        "significant": bool((lo > 0 or hi < 0) and p < alpha),
        "mde": inference.min_detectable(per_example, unit, alpha),
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
    out["mde"] = out.pop("mde")  # new columns last: stored tables keep their column order
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


def too_few(n_examples: SupportsInt, n_draws: SupportsInt) -> str | None:
    """Why TopK against a random control cannot be decided at these counts (None: it can)."""
    if int(n_examples) < MIN_EXAMPLES:
        return f"too few examples to decide (n = {int(n_examples)}; {MIN_EXAMPLES} needed)"
    if int(n_draws) < MIN_DRAWS:
        d = int(n_draws)
        return f"too few random draws to decide ({d} draw{'s' * (d != 1)}; {MIN_DRAWS} needed)"
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


def decided(row) -> bool:
    """Whether a row of :func:`significance` is significant *and* has enough examples and draws."""
    return bool(row.significant) and too_few(row.n_examples, row.n_draws) is None


def verdict(row) -> str:
    """One line a reader cannot misread, for a row of :func:`significance`."""
    why = too_few(row.n_examples, row.n_draws)
    if why:
        return why
    if not row.significant:
        if row.diff_low <= 0 <= row.diff_high:
            return "no difference shown (the 95% CI includes 0)"
        return f"no difference shown (p = {format_p(row.p_value)} >= 0.05)"
    side = "below" if row.diff < 0 else "above"
    return f"TopK {side} {row.control} (the 95% CI excludes 0)"


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
