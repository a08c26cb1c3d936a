"""Coverage of the pages' intervals on the binomial cases the pages hold: how often a 95%
interval holds the true value.

- Cell intervals (one deterministic set, ``n`` examples, true proportion ``p``): the coverage is
  computed exactly, summing the binomial probability of every count ``x`` whose interval holds
  ``p``. ``old``: the pages' interval before ``sweep.exact`` (the percentile bootstrap over
  examples widened to Wilson's, ``sweep.stats.summarize``); ``wilson``; ``clopper_pearson``.
- Difference intervals (TopK at ``p_top`` against ``draws`` RandomK draws at ``p_control``, the
  same ``n`` examples): simulated. ``old``: ``sweep.stats.paired_bootstrap``'s percentile
  interval; ``new``: ``sweep.exact.paired_test``'s (the inverted test).
"""

from __future__ import annotations

import numpy as np

from interp_heads.sweep.exact import clopper_pearson, paired_test
from interp_heads.sweep.inference import wilson_interval
from interp_heads.sweep.stats import paired_bootstrap, two_level_bootstrap


def _interval(x: int, n: int, method: str, n_boot: int = 1000) -> tuple[float, float]:
    if method == "clopper_pearson":
        return clopper_pearson(x, n)
    w = wilson_interval(x / n, n)
    if method == "wilson":
        return w
    values = np.zeros((1, n))
    values[0, :x] = 1.0
    lo, hi = two_level_bootstrap(values, n_boot)
    return min(lo, w[0]), max(hi, w[1])


def cell_coverage(n: int, p: float, method: str) -> float:
    """Exact coverage of ``method``'s 95% interval of a proportion ``p`` over ``n`` trials."""
    from scipy.stats import binom

    total = 0.0
    for x in range(n + 1):
        lo, hi = _interval(x, n, method)
        if lo - 1e-12 <= p <= hi + 1e-12:
            total += float(binom.pmf(x, n, p))
    return total


def difference_coverage(
    n: int, p_top: float, p_control: float, draws: int, reps: int, seed: int = 0
) -> dict:
    """``{"old": coverage, "new": coverage}`` of TopK minus RandomK's interval over ``reps``
    simulated cells (examples and draws Bernoulli at the given proportions)."""
    rng = np.random.default_rng(seed)
    truth = p_top - p_control
    held = {"old": 0, "new": 0}
    for _ in range(reps):
        top = (rng.random(n) < p_top).astype(float)
        control = (rng.random((draws, n)) < p_control).astype(float)
        old = paired_bootstrap(top, control, n_boot=500)
        new = paired_test(top, control)
        held["old"] += int(old["diff_low"] - 1e-9 <= truth <= old["diff_high"] + 1e-9)
        held["new"] += int(new["diff_low"] - 1e-9 <= truth <= new["diff_high"] + 1e-9)
    return {k: v / reps for k, v in held.items()}
