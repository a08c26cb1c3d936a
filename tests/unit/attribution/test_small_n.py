"""Verdicts at small n: too few examples, draws, halves or verified heads say so in words; no
verdict reads as its opposite; no ratio is printed infinite."""

from __future__ import annotations

import math
import warnings
from types import SimpleNamespace

import numpy as np
import pandas as pd
import torch

from interp_heads.attribution.scores import HeadScores
from interp_heads.attribution.stability import MIN_HALF, stability_of
from interp_heads.attribution.stability import verdict as stability_verdict
from interp_heads.attribution.verify import MIN_VERIFY
from interp_heads.attribution.verify import verdict as verify_verdict
from interp_heads.pipeline.ranking_stability import StabilityWarning, record_stability
from interp_heads.report.tables import (
    significance_table,
    topk_vs_random_table,
    verification_table,
)
from interp_heads.run import Manifest
from interp_heads.sweep import stats
from interp_heads.sweep.stats import significance, summarize


def _records(top: np.ndarray, rand: np.ndarray) -> pd.DataFrame:
    """Baseline 1.0 on every example, TopK ``top[example]``, RandomK ``rand[draw, example]``."""
    base = dict(task="t", k=4, metric="accuracy", label="Accuracy")
    rows = [dict(base, selection="baseline", seed=0, k=0, example_id=str(e), value=1.0)
            for e in range(top.size)]  # fmt: skip
    rows += [dict(base, selection="TopK", seed=0, example_id=str(e), value=float(v))
             for e, v in enumerate(top)]  # fmt: skip
    rows += [dict(base, selection="RandomK", seed=d, example_id=str(e), value=float(v))
             for d in range(rand.shape[0]) for e, v in enumerate(rand[d])]  # fmt: skip
    return pd.DataFrame(rows)


def test_minimums_follow_the_smallest_attainable_p():
    """The stated reasons, recomputed by hand: an exact paired sign-flip test over n examples
    reaches 2^(1-n) at best; 10 is the first n that clears 0.05 / 20 cells; the exact Spearman test
    over m heads reaches 2 / m! at best, first below 0.05 at m = 5."""
    first_n = next(n for n in range(2, 50) if 2.0 ** (1 - n) < 0.05 / 20)
    assert stats.MIN_EXAMPLES == first_n == 10
    first_m = next(m for m in range(2, 20) if 2 / math.factorial(m) < 0.05)
    assert MIN_VERIFY == first_m == 5
    assert stats.MIN_DRAWS == 5 and MIN_HALF == 5


def test_seven_examples_two_draws_is_too_few_to_decide():
    """TopK 0 and RandomK 1 everywhere: the exact test's p is its floor at n = 7, 2 ** -6, and
    the page shows no p at all."""
    records = _records(np.zeros(7), np.ones((2, 7)))
    sig = significance(records)
    assert bool(sig.significant.iloc[0]) and sig.p_examples.iloc[0] == 2.0**-6
    page = significance_table(sig)
    assert "undecided (n = 7" in page
    assert " *" not in page and "0.016" not in page and "&lt; 0.001" not in page
    assert "inf" not in page and "1.00 vs 0.00" in page  # RandomK did not drop: both drops
    grid = topk_vs_random_table(summarize(records), sig)
    assert "*" not in grid


def test_enough_examples_but_two_draws_is_too_few_and_enough_of_both_decides():
    rng = np.random.default_rng(0)
    top = (rng.random(40) < 0.1).astype(float)
    few = significance(_records(top, (rng.random((2, 40)) < 0.9).astype(float)))
    assert "undecided (2 random draws" in significance_table(few)
    rand = (rng.random((5, 40)) < 0.8).astype(float)
    sig = significance(_records(top, rand))
    page = significance_table(sig)
    assert " *" in page and "TopK below RandomK" in page and "undecided" not in page
    ratio = (1 - top.mean()) / (1 - rand.mean())  # drops from the unmasked 1.0, by hand
    assert f"{ratio:.1f}x" in page
    assert "*" in topk_vs_random_table(summarize(_records(top, rand)), sig)


def test_drop_ratio_is_never_infinite():
    assert stats.drops_text(0.5, 0.0) == "0.50 vs 0.00"
    assert stats.drops_text(0.5, -0.1) == "0.50 vs -0.10"
    assert stats.drops_text(0.6, 0.2) == "3.0x"
    assert stats.drops_text(float("nan"), 0.0) == ""


def _entry(n_half: list[int], shared: int, k: int = 16) -> dict:
    jaccard = shared / (2 * k - shared)
    scores = HeadScores(torch.zeros(4, 8), "m", "t", provenance={"split_half": {
        "n_examples": sum(n_half), "n_half": n_half,
        "scores": [torch.arange(32.0).view(4, 8).tolist()] * 2}})  # fmt: skip
    entry = stability_of(scores, [k])
    entry["jaccard"], entry["shared"] = {str(k): jaccard}, {str(k): shared}
    return entry


def test_stability_words():
    assert stability_verdict(_entry([3, 3], 8), 16).startswith(
        "too few examples to decide (n = 6, 3/3 per half"
    )
    assert stability_verdict(_entry([12, 12], 4), 16) == (
        "unstable: the halves share 4 of their top 16"
    )
    # Jaccard 1/3 exactly (8 of 16 shared) was called "stable"; it is at the edge of unstable
    assert stability_verdict(_entry([12, 12], 8), 16).startswith("partly stable")
    assert stability_verdict(_entry([12, 12], 14), 16).startswith("stable: the halves share 14")


def test_small_halves_do_not_warn_unstable():
    up = torch.arange(20.0).view(4, 5)
    halves = [up.tolist(), up.flip(0).flip(1).tolist()]  # no head in both top 5
    for n_half, warns in (([3, 3], False), ([6, 6], True)):
        scores = HeadScores(up, "m", "t", provenance={"rank_by": "signed", "split_half": {
            "n_examples": sum(n_half), "n_half": n_half, "scores": halves}})  # fmt: skip
        record = SimpleNamespace(manifest=Manifest())  # the run's record
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            record_stability(record, "t", scores, [5])
        assert any(issubclass(w.category, StabilityWarning) for w in seen) == warns


def test_verification_judges_set_and_order_apart():
    text = verify_verdict(8, 8, 7, 0.98, 0.55)
    assert text.startswith("top set confirmed: 7 of the top 8")
    assert "order NOT confirmed: Spearman 0.55 over all 16 verified heads (below 0.8" in text
    assert "FLAGGED: agreement below" not in text
    assert verify_verdict(3, 3, 3, float("nan"), 1.0).startswith("too few heads to decide")
    weak = verify_verdict(8, 8, 2, 0.9, 0.9)
    assert weak.startswith("top set NOT confirmed: 2 of the top 8") and "order confirmed" in weak
    manifest = {"verification": {"t": {"m": 8, "top_confirmed": 7, "spearman": 0.55,
                                       "spearman_sample": 0.98, "flag": True, "verdict": text}}}  # fmt: skip
    page = verification_table(manifest)
    assert "FLAGGED: order not confirmed" in page and "do not trust" not in page
