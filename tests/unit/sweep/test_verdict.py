"""The one verdict (``sweep.verdict``): Holm decides, undecided reasons are never "no", and the
rule's error rates are read from a calibration."""

from __future__ import annotations

import numpy as np
import pandas as pd

from interp_heads.sweep import verdict as rule


def test_collapse_cases():
    assert rule.collapse(-0.5, 0.01, 24, 5) == "yes"
    assert rule.collapse(+0.5, 0.01, 24, 5) == "no"  # TopK above: never a collapse
    assert rule.collapse(-0.5, 0.05, 24, 5) == "no"
    assert rule.collapse(-0.5, 0.01, 9, 5) == "undecided (n = 9; 10 needed)"
    assert rule.collapse(-0.5, 0.01, 24, 5, min_examples=48) == "undecided (n = 24; 48 needed)"
    assert rule.collapse(-0.5, 0.01, 24, 3) == "undecided (3 random draws; 5 needed)"
    assert rule.collapse(float("nan"), 0.01, 24, 5) == "no data"
    why = "the unmasked score 0.00 is below the floor 0.5: nothing can drop"
    assert rule.collapse(0.0, 1.0, 24, 5, undecided=why) == f"undecided: {why}"
    assert not rule.is_decided(rule.collapse(0.0, 1.0, 24, 5, undecided=why))


def test_decide_uses_holm_over_the_frame_and_passes_reasons():
    frame = pd.DataFrame({
        "diff": [-0.5, -0.5, -0.5, -0.4],
        "p_value": [0.001, 0.02, 0.03, 0.001],
        "n_examples": [24, 24, 24, 24], "n_draws": [5, 5, 5, 5],
        "undecided": ["", None, np.nan, "the metric cannot score plain answers"],
    })  # fmt: skip
    out = rule.decide(frame)
    # Holm by hand: sorted 0.001, 0.001, 0.02, 0.03 -> 0.004, 0.004 (max with 0.003), 0.04, 0.04
    np.testing.assert_allclose(out.p_holm, [0.004, 0.04, 0.04, 0.004])
    assert list(out.collapses) == [
        "yes",
        "yes",
        "yes",
        "undecided: the metric cannot score plain answers",
    ]
    raw = rule.decide(frame.assign(p_value=[0.001, 0.02, 0.03, 0.5]).drop(columns="undecided"))
    assert list(raw.collapses) == ["yes", "no", "no", "no"]  # 0.02 x 3 = 0.06 after Holm


def test_ratio_reading():
    assert rule.ratio_reading(0.9, 0.3) == "3x: yes" and rule.ratio_reading(0.6, 0.3) == "3x: no"
    assert rule.ratio_reading(0.5, 0.0) == "3x: yes" and rule.ratio_reading(np.nan, 0.1) == ""


def test_error_rates_read_the_nearest_calibrated_n_below():
    cal = {"rows": [
        {"rule": "holm_exact", "kind": "randomk_vs_randomk", "n": 19, "draws": 5, "fpr": 0.01, "fpr_low": 0.0, "fpr_high": 0.03},
        {"rule": "holm_exact", "kind": "random_weights", "n": 19, "draws": 5, "fpr": 0.02, "fpr_low": 0.01, "fpr_high": 0.04},
        {"rule": "holm_exact", "kind": "power", "n": 19, "draws": 5, "effect": 0.5, "power": 0.2},
        {"rule": "holm_exact", "kind": "randomk_vs_randomk", "n": 48, "draws": 5, "fpr": 0.03, "fpr_low": 0.02, "fpr_high": 0.05},
        {"rule": "ratio_3x", "kind": "randomk_vs_randomk", "n": 19, "draws": 5, "fpr": 0.4, "fpr_low": 0.3, "fpr_high": 0.5},
    ]}  # fmt: skip
    text = rule.error_rates(24, 5, calibration=cal)
    assert text == "FPR 0.02 [0.01, 0.04]; power 0.20 at drop 0.5 (calibrated at n = 19, 5 draws)"
    assert rule.error_rates(60, 5, calibration=cal).startswith("FPR 0.03 [0.02, 0.05] (")
    assert rule.error_rates(24, 20, calibration=cal) == "not calibrated"
    assert rule.error_rates(24, 5, calibration={}) == "not calibrated"


def test_error_rates_name_the_trained_models_power_by_its_bin_of_true_drops():
    cal = {"rows": [
        {"rule": "holm_exact", "kind": "zoo_null", "n": 24, "draws": 5, "fpr": 0.04, "fpr_low": 0.02, "fpr_high": 0.07},
        {"rule": "holm_exact", "kind": "zoo_power", "n": 24, "draws": 5, "effect": 0.7, "effect_high": 1.0, "power": 0.6},
        {"rule": "holm_exact", "kind": "zoo_power", "n": 24, "draws": 5, "effect": 0.3, "effect_high": 0.5, "power": 0.05},
    ]}  # fmt: skip
    assert rule.error_rates(30, 5, calibration=cal) == (
        "FPR 0.04 [0.02, 0.07]; power on trained models (zoo.planted_power) 0.05 / 0.60 at true "
        "drop 0.3-0.5 / 0.7-1 (calibrated at n = 24, 5 draws)"
    )
