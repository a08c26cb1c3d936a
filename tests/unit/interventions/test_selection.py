from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest

from interp_heads.heads import all_heads, parse_head
from interp_heads.interventions.selections import (
    LayerMatchedRandomK,
    RandomK,
    TopK,
    make_selections,
)
from interp_heads.sweep.stats import summarize, two_level_bootstrap

RANK = [(2, 1), (2, 0), (1, 3), (0, 0), (1, 1), (0, 2)] + [
    h for h in all_heads(3, 4) if h not in {(2, 1), (2, 0), (1, 3), (0, 0), (1, 1), (0, 2)}
]


def test_topk_takes_the_head_of_the_ranking():
    assert TopK(tuple(RANK)).select(3) == [(2, 1), (2, 0), (1, 3)]


def test_randomk_is_seeded_nested_and_distinct():
    sel = RandomK(3, 4, salt="t")
    a4, a8 = sel.select(4, seed=1), sel.select(8, seed=1)
    assert a8[:4] == a4 and len(set(a8)) == 8
    assert sel.select(4, seed=1) == a4 and sel.select(4, seed=2) != a4
    assert RandomK(3, 4, salt="other").select(8, 1) != a8


def test_randomk_can_exclude_topk():
    sel = RandomK(3, 4, ranking=tuple(RANK), options=RandomK.Options(exclude_top=True))
    for seed in range(5):
        assert not set(sel.select(4, seed)) & set(RANK[:4])
    with pytest.raises(ValueError, match="exceeds"):
        sel.select(7, 0)


def test_layer_matched_has_same_layer_counts_and_avoids_top():
    sel = LayerMatchedRandomK(tuple(RANK), n_heads=4)
    for k in (2, 4, 6):
        got = sel.select(k, seed=0)
        top = RANK[:k]
        assert sorted(h[0] for h in got) == sorted(h[0] for h in top)
        assert not set(got) & set(top)  # every layer here has enough non-top heads


def test_make_selections_names():
    made = make_selections(["topk", "RandomK", "layer_matched"], RANK, 3, 4)
    names = [s.display for s in made]
    assert names == ["TopK", "RandomK", "LayerMatchedRandomK"]
    with pytest.raises(ValueError):
        make_selections(["best"], RANK, 3, 4)


def test_parse_head_errors():
    assert parse_head("L2H3", 3, 4) == (2, 3)
    with pytest.raises(ValueError, match="layer must be in 0..2"):
        parse_head("L99H1", 3, 4)
    with pytest.raises(ValueError, match="expected L<layer>H<head>"):
        parse_head("layer2", 3, 4)


def test_bootstrap_ci_brackets_the_mean_and_shrinks_with_data():
    rng = np.random.default_rng(0)
    small = rng.random((2, 10))
    big = rng.random((10, 400))
    lo, hi = two_level_bootstrap(small)
    assert lo <= small.mean() <= hi
    lo2, hi2 = two_level_bootstrap(big)
    assert hi2 - lo2 < hi - lo
    const = np.ones((3, 5))
    assert two_level_bootstrap(const) == (1.0, 1.0)


def test_summarize_computes_mean_drop_against_baseline():
    rows = []
    for ex in range(4):
        rows.append(
            dict(
                task="t",
                selection="baseline",
                seed=0,
                k=0,
                metric="accuracy",
                label="Accuracy",
                example_id=str(ex),
                value=1.0,
            )
        )
        rows.append(
            dict(
                task="t",
                selection="TopK",
                seed=0,
                k=2,
                metric="accuracy",
                label="Accuracy",
                example_id=str(ex),
                value=float(ex == 0),
            )
        )
        for seed in range(3):
            rows.append(
                dict(
                    task="t",
                    selection="RandomK",
                    seed=seed,
                    k=2,
                    metric="accuracy",
                    label="Accuracy",
                    example_id=str(ex),
                    value=float(seed != 0 or ex > 1),
                )
            )
    s = summarize(pd.DataFrame(rows)).set_index("selection")
    assert s.loc["TopK", "mean"] == 0.25 and s.loc["TopK", "drop"] == 0.75
    assert s.loc["RandomK", "mean"] == pytest.approx(10 / 12)
    assert s.loc["RandomK", "draw_means"] == [0.5, 1.0, 1.0]
    assert s.loc["RandomK", "n_draws"] == 3 and s.loc["baseline", "ci_high"] == 1.0
    # 4 of 4 correct: accuracy is a proportion, so its interval is Clopper-Pearson's, not [1, 1]
    exact = binomtest(4, 4).proportion_ci(0.95, method="exact")
    assert s.loc["baseline", "ci_low"] == pytest.approx(exact.low)
