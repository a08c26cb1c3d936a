"""docs/calibration.md's page from a payload holding every kind of row (bench.checks.calibration):
the trained models' null counts among the nulls, their power has its own table and sentence."""

from bench.checks.calibration import render


def test_page_shows_the_trained_models_rows_beside_the_simulated_ones():
    rows = [
        {"rule": "holm_exact", "kind": "randomk_vs_randomk", "n": 24, "draws": 5,
         "replicates": 400, "positives": 0, "fpr": 0.0, "fpr_low": 0.0, "fpr_high": 0.009},
        {"rule": "holm_exact", "kind": "zoo_null", "n": 24, "draws": 5, "replicates": 400,
         "positives": 8, "fpr": 0.02, "fpr_low": 0.009, "fpr_high": 0.039},
        {"rule": "holm_exact", "kind": "power", "n": 24, "draws": 5, "replicates": 400,
         "positives": 4, "effect": 0.5, "power": 0.01, "power_low": 0.0, "power_high": 0.03},
        {"rule": "holm_exact", "kind": "zoo_power", "n": 24, "draws": 5, "replicates": 400,
         "positives": 246, "effect": 0.7, "effect_high": 1.0, "true_drop": 0.76,
         "power": 0.615, "power_low": 0.544, "power_high": 0.683},
    ]  # fmt: skip
    page = render({"command": "c", "generated": "g", "seconds": {}, "family": 8, "rows": rows,
                   "cell_coverage": [], "difference_coverage": []})  # fmt: skip
    assert "| holm_exact | zoo_null | 24 | 5 | 400 | 8 | 0.020 [0.009, 0.039] |" in page
    assert "| holm_exact | 24 | 5 | 0.7 to 1 | 0.76 | 400 | 0.615 [0.544, 0.683] |" in page
    assert "worst FPR per rule: `holm_exact` 0.020." in page
    assert "trained zoo models: power n = 24: 0.61 at true drop 0.7 to 1." in page
    assert "| holm_exact | heavy-tailed | 24 | 5 | 0.5 | 400 | 0.010 [0.000, 0.030] |" in page
