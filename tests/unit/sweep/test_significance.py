"""Significance of TopK vs random controls: paired bootstrap over examples and draws."""

from __future__ import annotations

import numpy as np
import pandas as pd

from interp_heads.sweep.stats import paired_difference, significance


def _records(top: np.ndarray, rand: np.ndarray) -> pd.DataFrame:
    rows = [
        {
            "task": "t",
            "selection": "baseline",
            "seed": 0,
            "k": 0,
            "metric": "accuracy",
            "label": "Accuracy",
            "example_id": str(e),
            "value": 1.0,
        }
        for e in range(top.size)
    ]
    rows += [
        {
            "task": "t",
            "selection": "TopK",
            "seed": 0,
            "k": 4,
            "metric": "accuracy",
            "label": "Accuracy",
            "example_id": str(e),
            "value": float(v),
        }
        for e, v in enumerate(top)
    ]
    rows += [
        {
            "task": "t",
            "selection": "RandomK",
            "seed": d,
            "k": 4,
            "metric": "accuracy",
            "label": "Accuracy",
            "example_id": str(e),
            "value": float(v),
        }
        for d in range(rand.shape[0])
        for e, v in enumerate(rand[d])
    ]
    return pd.DataFrame(rows)


def test_clear_difference_is_significant():
    rng = np.random.default_rng(0)
    top = (rng.random(60) < 0.1).astype(float)
    rand = (rng.random((5, 60)) < 0.9).astype(float)
    res = paired_difference(top, rand)
    assert res["significant"] and res["diff_high"] < 0 and res["p_value"] < 0.01
    assert abs(res["diff"] - (top.mean() - rand.mean())) < 1e-12
    sig = significance(_records(top, rand))
    (row,) = sig.itertuples(index=False)
    assert (
        row.control == "RandomK" and row.significant and row.n_draws == 5 and row.n_examples == 60
    )
    assert abs(row.drop_ratio - (1 - top.mean()) / (1 - rand.mean())) < 1e-9


def test_no_difference_is_not_significant():
    rng = np.random.default_rng(1)
    vals = (rng.random((6, 80)) < 0.7).astype(float)
    res = paired_difference(vals[0], vals[1:])
    assert (
        not res["significant"] and res["p_value"] > 0.05 and res["diff_low"] < 0 < res["diff_high"]
    )


def test_draw_variability_widens_the_interval():
    """Same example means, but random draws that disagree: the interval must be wider."""
    top = np.full(50, 0.5)
    steady = np.full((4, 50), 0.7)
    shaky = np.array([np.full(50, v) for v in (0.2, 1.0, 0.4, 1.0)])  # mean 0.65, varies by draw
    a, b = paired_difference(top, steady), paired_difference(top, shaky)
    assert (b["diff_high"] - b["diff_low"]) > (a["diff_high"] - a["diff_low"]) + 0.1


def test_a_proportion_cell_gets_an_exact_interval_not_a_point():
    """0 correct of 48: the bootstrap alone gives [0, 0]; Clopper-Pearson [0, 0.074]."""
    from interp_heads.sweep.stats import summarize

    rec = _records(np.zeros(48), np.zeros((5, 48)))
    s = summarize(rec).set_index("selection")
    assert s.loc["TopK", "ci_low"] == 0.0 and abs(s.loc["TopK", "ci_high"] - 0.0741) < 1e-3
    assert s.loc["RandomK", "ci_high"] >= 0.07  # the draws share the examples: n counts them once
    chrf = rec.assign(metric="chrf")  # a score in [0, 1], not a proportion: the bootstrap
    s = summarize(chrf).set_index("selection")
    assert s.loc["TopK", "ci_low"] == s.loc["TopK", "ci_high"] == 0.0


def test_p_value_is_the_exact_paired_sign_flip_test():
    """Equal-size per-example differences: the sign-flip test is the two-sided sign test."""
    from scipy.stats import binomtest

    top = np.array([0.0] * 9 + [1.0] * 3)
    rand = np.ones((5, 12))  # TopK lower on 9 examples, equal on 3
    res = paired_difference(top, rand)
    assert res["p_examples"] == binomtest(0, 9).pvalue == 2.0**-8
    # the cell's p: the largest of its parts (draws alike: the draws' test rejects outright)
    assert res["p_draws"] == 0.0 and res["p_value"] == max(res["p_examples"], res["p_box"])
    sig = significance(_records(top, rand))
    assert sig.p_value.iloc[0] == res["p_value"]
    new = ["mde", "p_examples", "p_draws", "p_box", "p_holm"]  # appended: stored order kept
    assert list(sig.columns[-5:]) == new


def test_holm_over_the_tables_rows():
    from interp_heads.sweep.inference import holm

    rng = np.random.default_rng(0)
    a = _records((rng.random(30) < 0.2).astype(float), (rng.random((5, 30)) < 0.8).astype(float))
    b = a.assign(k=8, value=np.where(a.selection == "TopK", 1 - a.value, a.value))
    sig = significance(pd.concat([a, b], ignore_index=True))
    assert len(sig) == 2
    np.testing.assert_allclose(sig.p_holm, holm(sig.p_value))
    assert (sig.p_holm >= sig.p_value).all() and (sig.n_examples == 30).all()
    assert (sig.n_draws == 5).all() and (sig.mde > 0).all()


def test_an_interval_off_zero_with_a_large_p_is_not_a_difference_shown():
    """The two rules can disagree on a borderline cell: the verdict names the one that fails."""
    from interp_heads.sweep.stats import verdict

    row = pd.Series(
        dict(diff=-0.1, diff_low=-0.2, diff_high=-0.01, p_value=0.07, significant=False,
             n_examples=30, n_draws=5, control="RandomK")
    )  # fmt: skip
    assert verdict(row) == "no difference shown (Holm p = 0.070 >= 0.05)"
    held = pd.concat([row, pd.Series({"p_holm": 0.2})])  # Holm decides when the row has it
    assert verdict(held) == "no difference shown (Holm p = 0.200 >= 0.05)"
    assert verdict(pd.concat([row, pd.Series({"p_holm": 0.01})])).startswith("TopK below")


def test_significant_needs_the_exact_test_too():
    """Five examples, all lower: every bootstrap replicate was -1, but the sign-flip p is 1/16:
    the interval inverts the same test, so it holds 0."""
    res = paired_difference(np.zeros(5), np.ones((5, 5)))
    assert res["p_examples"] == 2.0**-4 and res["p_value"] >= 2.0**-4
    assert not res["significant"] and res["diff_low"] == -1.0 and res["diff_high"] >= 0.0
