"""The verdict's exact test (``sweep.exact``): Clopper-Pearson against scipy's exact binomial
interval and a hand table, the draws' prediction test against a t computed here, the interval
that never contradicts its p, and no point interval for 0 of n against 0 of n."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import binomtest
from scipy.stats import t as student

from interp_heads.sweep import exact


@pytest.mark.parametrize("x, n", [(0, 19), (1, 24), (12, 24), (24, 24), (3, 48), (59, 60)])
def test_clopper_pearson_equals_scipys_exact_interval(x, n):
    want = binomtest(x, n).proportion_ci(0.95, method="exact")
    assert exact.clopper_pearson(x, n) == pytest.approx((want.low, want.high), abs=1e-10)


def test_clopper_pearson_hand_table():
    # 0 of n: upper end 1 - 0.025 ** (1 / n) (solve (1 - p) ** n = 0.025); n of n mirrors it
    for n in (19, 24, 48, 60):
        hi = 1 - 0.025 ** (1 / n)
        assert exact.clopper_pearson(0, n) == pytest.approx((0.0, hi), abs=1e-12)
        assert exact.clopper_pearson(n, n) == pytest.approx((1 - hi, 1.0), abs=1e-12)
    assert exact.clopper_pearson(0, 48)[1] == pytest.approx(0.0739, abs=1e-4)  # 0.074 by hand


def test_the_draws_test_is_a_t_over_the_draw_means():
    rng = np.random.default_rng(1)
    top = (rng.random(24) < 0.2).astype(float)
    control = (rng.random((5, 24)) < rng.uniform(0.3, 0.9, (5, 1))).astype(float)
    means = control.mean(axis=1)
    t = (top.mean() - means.mean()) / (means.std(ddof=1) * np.sqrt(1 + 1 / 5))
    assert exact.draws_p(top, control) == pytest.approx(2 * student.sf(abs(t), 4), rel=1e-9)


def _brute_p(d):
    d = d[np.abs(d) > 1e-12]
    if not d.size:
        return 1.0
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=d.size)))
    return float((np.abs(signs @ d) >= abs(d.sum()) - 1e-9).mean())


def test_examples_part_is_the_enumerated_sign_flip_test():
    rng = np.random.default_rng(2)
    top = (rng.random(12) < 0.3).astype(float)
    control = (rng.random((5, 12)) < 0.7).astype(float)
    res = exact.paired_test(top, control)
    assert res["p_examples"] == pytest.approx(_brute_p(top - control.mean(axis=0)), rel=1e-9)
    assert res["p_value"] == max(res["p_examples"], res["p_draws"], res["p_box"])


def test_zero_of_n_against_zero_of_n_is_not_a_point():
    res = exact.paired_test(np.zeros(48), np.zeros((5, 48)))
    assert res["p_value"] == 1.0 and res["diff_low"] < -0.07 and res["diff_high"] > 0.07


def test_one_example_cannot_exclude_anything():
    """The CogQA cell: n = 1 showed [-1.00, -0.20] beside p = 1.000; now the interval is all."""
    res = exact.paired_test(np.zeros(1), np.array([[1.0], [0.0], [1.0], [1.0], [0.0]]))
    assert res["p_value"] == 1.0 and (res["diff_low"], res["diff_high"]) == (-1.0, 1.0)


@pytest.mark.parametrize("seed", range(12))
def test_the_interval_holds_zero_exactly_when_p_is_at_least_alpha(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.choice([10, 19, 24]))
    top = (rng.random(n) < rng.uniform(0, 1)).astype(float)
    control = (rng.random((5, n)) < rng.uniform(0, 1, (5, 1))).astype(float)
    res = exact.paired_test(top, control)
    assert (res["diff_low"] <= 0 <= res["diff_high"]) == (res["p_value"] >= 0.05)
    assert res["diff_low"] <= res["diff"] <= res["diff_high"]


def test_a_continuous_metric_uses_the_sign_flip_and_draws_tests_only():
    rng = np.random.default_rng(3)
    top = rng.normal(-1.0, 1.0, 20)
    control = rng.normal(0.0, 1.0, (5, 20))
    res = exact.paired_test(top, control)
    assert np.isnan(res["p_box"]) and res["p_value"] == max(res["p_examples"], res["p_draws"])
    assert res["diff_high"] < 0 and res["p_value"] < 0.05
