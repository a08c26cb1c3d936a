"""The calibration (``analysis.calibration``) and the intervals' coverage
(``analysis.coverage``) on a few replicates: the counts against a hand rule, the exact intervals
against scipy, and the coverage of the new intervals at the pages' n (seconds)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom, binomtest

from interp_heads.analysis import calibration as cal
from interp_heads.analysis import coverage as cov


def test_rows_carry_exact_intervals():
    rows = cal.rows_for("random_weights", 19, 5, 16, seed=0)
    assert [r["rule"] for r in rows] == list(cal.RULES)
    for r in rows:
        want = binomtest(r["positives"], 16).proportion_ci(0.95, method="exact")
        assert (r["fpr_low"], r["fpr_high"]) == pytest.approx((want.low, want.high), abs=1e-9)


def test_a_planted_collapse_is_found_with_enough_draws():
    """TopK loses every example (drop probability 1) against draws without a heavy tail (about
    0.7 each): with 20 draws both tests say yes in every cell; under the heavy tail the Holm rule
    does not (a TopK at 0 is within what random draws reach), and the 3x ratio need not."""
    rows = {r["rule"]: r for r in cal.rows_for("power_light", 48, 20, 8, seed=1, effect=1.0)}
    assert rows["holm_exact"]["power"] == 1.0 and rows["sweep_raw"]["power"] == 1.0
    heavy = {r["rule"]: r for r in cal.rows_for("power", 48, 20, 8, seed=1, effect=1.0)}
    assert heavy["holm_exact"]["power"] < 1.0


def test_holm_over_the_family_by_hand():
    rng = np.random.default_rng(4)
    cells = [cal.simulate(rng, 24, 5, "power", 0.9) for _ in range(cal.FAMILY)]
    calls = cal.family_calls(cells)
    ps = np.array([c["p"] for c in calls])
    order = np.argsort(ps)
    adj = np.maximum.accumulate([(len(ps) - i) * ps[j] for i, j in enumerate(order)])
    want = np.empty_like(ps)
    want[order] = np.minimum(adj, 1.0)
    assert [c["holm_exact"] for c in calls] == [
        bool(a < 0.05 and c["diff"] < 0) for a, c in zip(want, calls, strict=True)
    ]


@pytest.mark.parametrize("n", [19, 24, 48, 60])
def test_clopper_pearson_covers_at_the_pages_n(n):
    """Exact coverage of the cell intervals at 0, 0.1, 0.5, 0.9 and 1, against a coverage summed
    here from scipy's binomial and scipy's exact interval."""
    for p in (0.0, 0.1, 0.5, 0.9, 1.0):
        got = cov.cell_coverage(n, p, "clopper_pearson")
        want = sum(
            binom.pmf(x, n, p)
            for x in range(n + 1)
            if (ci := binomtest(x, n).proportion_ci(0.95, method="exact")).low - 1e-12
            <= p
            <= ci.high + 1e-12
        )
        assert got == pytest.approx(want, abs=1e-9) and got >= 0.95


def test_new_difference_intervals_cover_on_the_pages_cases():
    """20 simulated cells per case at n = 19 and 48, 5 draws (fixed seeds): the new intervals'
    misses over the 240 cells stay within what a 95% interval allows."""
    cases = [(0.0, 0.0), (0.1, 0.1), (0.5, 0.5), (0.9, 0.9), (1.0, 1.0), (0.0, 0.6)]
    new = [
        cov.difference_coverage(n, a, b, 5, 20, seed=n)["new"] for n in (19, 48) for a, b in cases
    ]
    misses = round(sum((1 - c) * 20 for c in new))
    assert misses <= 22  # P(Bin(240, 0.05) > 22) < 0.01: a 90% interval would exceed it
    assert min(new) >= 0.8
