"""Exact intervals, the sign-flip test, Holm and the detectable difference against hand values
and scipy's own implementations."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import binomtest

from interp_heads.sweep import inference


@pytest.mark.parametrize("x, n", [(0, 48), (3, 48), (24, 48), (48, 48), (1, 8)])
def test_wilson_interval_equals_scipy(x, n):
    lo, hi = inference.wilson_interval(x / n, n)
    want = binomtest(x, n).proportion_ci(0.95, method="wilson")
    assert lo == pytest.approx(want.low, abs=1e-12) and hi == pytest.approx(want.high, abs=1e-12)


def test_none_correct_of_48_is_not_a_point():
    lo, hi = inference.wilson_interval(0.0, 48)
    assert lo == 0.0 and hi == pytest.approx(3.8415 / (48 + 3.8415), abs=1e-4)  # 0.074


@pytest.mark.parametrize("pos, neg", [(9, 1), (7, 3), (5, 5), (12, 0), (30, 10)])
def test_sign_flip_on_equal_magnitudes_is_the_sign_test(pos, neg):
    d = np.array([1.0] * pos + [-1.0] * neg + [0.0] * 4)  # zeros drop out
    assert inference.sign_flip_p(d) == pytest.approx(binomtest(pos, pos + neg).pvalue, rel=1e-9)


def _enumerated(d):
    signs = np.array(list(itertools.product((1, -1), repeat=len(d))))
    return float((np.abs(signs @ d) >= abs(d.sum()) - 1e-12).mean())


def test_sign_flip_on_a_draw_grid_equals_enumeration():
    d = np.array([-1.0, -0.8, -0.6, 0.2, -1.0, -0.4, 0.0, -0.2, 0.6, -1.0, -0.8, 0.4])  # 1/5 grid
    assert inference.sign_flip_p(d) == pytest.approx(_enumerated(d), rel=1e-12)


def test_sign_flip_on_real_differences_equals_enumeration():
    d = np.random.default_rng(3).normal(-0.3, 1.0, size=11) * np.pi
    assert inference.sign_flip_p(d) == pytest.approx(_enumerated(d), rel=1e-12)


def test_sign_flip_floor_is_two_to_the_one_minus_n():
    assert inference.sign_flip_p(-np.ones(10)) == pytest.approx(2.0**-9)
    assert inference.sign_flip_p(np.zeros(48)) == 1.0


def test_sign_flip_monte_carlo_for_many_real_differences():
    d = np.random.default_rng(0).normal(-0.05, 1.0, size=40) * np.e
    normal_p = 2 * (1 - __import__("scipy").stats.norm.cdf(abs(d.sum()) / np.sqrt((d * d).sum())))
    assert inference.sign_flip_p(d) == pytest.approx(normal_p, abs=0.02)


def test_holm_by_hand():
    got = inference.holm([0.01, 0.04, 0.03, 0.005, np.nan])
    # sorted 0.005, 0.01, 0.03, 0.04 (m = 4): 4 x 0.005, 3 x 0.01, 2 x 0.03, max(0.06, 1 x 0.04)
    np.testing.assert_allclose(got[:4], [0.03, 0.06, 0.06, 0.02])
    assert np.isnan(got[4])


def test_min_detectable_difference():
    c = 1.959964 + 0.841621
    assert inference.min_detectable(np.zeros(48), True) == pytest.approx(c * c / (48 + c * c), 1e-5)
    d = np.array([1.0, -1.0] * 50)
    assert inference.min_detectable(d, False) == pytest.approx(c * np.std(d, ddof=1) / 10, 1e-5)
    assert inference.min_detectable(d, True) == inference.min_detectable(d, False)
