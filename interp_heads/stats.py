"""Summaries with 95% confidence intervals.

For a TopK condition (one deterministic head set) the interval is a bootstrap over examples. For
random selections it is a two-level bootstrap: resample the random draws (seeds), then the examples,
so the interval reflects both which heads were drawn and which examples were asked.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def two_level_bootstrap(values: np.ndarray, n_boot: int = 1000, seed: int = 0, alpha: float = 0.05) -> tuple[float, float]:
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
        base = frame[frame.selection == "baseline"].set_index(["task", "metric"])["mean"]
        frame["baseline"] = [base.get((t, m), np.nan) for t, m in zip(frame.task, frame.metric, strict=True)]
        frame["drop"] = frame["baseline"] - frame["mean"]
    return frame
