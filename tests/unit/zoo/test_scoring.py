"""The truth's derived facts and the scores, against hand computations and scipy."""

import numpy as np
import pytest

from interp_heads.errors import PipelineError
from interp_heads.zoo.ground import ground_truth
from interp_heads.zoo.scoring import one_minimal, precision_recall_at, rank_scores, roc_auc
from interp_heads.zoo.truth import Enumeration, subset_masks


def test_roc_auc_against_a_hand_count_and_scipy():
    from scipy.stats import mannwhitneyu

    # positives 0.9, 0.4, 0.4; negatives 0.5, 0.4, 0.1: pairs ordered right 3 + 0.5 + 0.5 + 1 + 1
    scores, labels = [0.9, 0.4, 0.4, 0.5, 0.4, 0.1], [1, 1, 1, 0, 0, 0]
    assert roc_auc(scores, labels) == pytest.approx((3 + 1 + 1 + 0.5 + 0.5 + 0 + 0) / 9)
    rng = np.random.default_rng(0)
    for _ in range(20):
        s = rng.integers(0, 5, 15).astype(float)
        y = rng.random(15) < 0.4
        if y.all() or not y.any():
            continue
        u = mannwhitneyu(s[y], s[~y]).statistic
        assert roc_auc(s, y) == pytest.approx(u / (y.sum() * (~y).sum()))
    assert np.isnan(roc_auc([1, 2], [True, True]))


def _synthetic(n_layers=2, n_heads=2):
    """m(kept set) = sum of per-head weights (heads 0 and 2 matter most), none kept = 0."""
    w = np.array([5.0, 0.2, 3.0, 0.1])
    masks = np.array(subset_masks(n_layers * n_heads), dtype=np.int64)
    m = np.array([sum(w[i] for i in range(4) if (int(s) >> i) & 1) for s in masks])
    return Enumeration("mean", n_layers, n_heads, masks,
                       {"logprob": m, "logit": m, "accuracy": m / m.max()}, 8, True)  # fmt: skip


def test_ground_truth_of_an_additive_model():
    e = _synthetic()
    t = ground_truth(e)
    # f = m / 8.3; {0, 2} gives 8/8.3 = 0.964 >= 0.9, no single head does (5/8.3 = 0.60)
    assert t.minimum == [[(0, 0), (1, 0)]] and t.min_size == 2
    assert t.necessary.tolist() == [True, False, True, False]
    assert t.single_damage == pytest.approx([5.0, 0.2, 3.0, 0.1])
    assert t.optimal_damage == pytest.approx([0, 5.0, 8.0, 8.2, 8.3])
    assert t.optimal_sets[1] == [(0, 0)] and t.optimal_sets[2] == [(0, 0), (1, 0)]
    assert t.in_optimal.tolist() == [3, 1, 2, 0]  # k = 1, 2, 3
    assert one_minimal(e, [(0, 0), (1, 0)]) is True
    assert one_minimal(e, [(0, 0), (1, 0), (1, 1)]) is False  # (1, 1) can go
    assert one_minimal(e, [(0, 0)]) is False  # not sufficient


def test_precision_recall_and_rank_scores():
    ranking = [(1, 0), (0, 1), (0, 0), (1, 1)]
    pos = np.array([True, False, True, False])
    assert precision_recall_at(ranking, pos, 2, 2) == (0.5, 0.5)
    assert precision_recall_at(ranking, pos, 2, 3) == (2 / 3, 1.0)
    assert rank_scores(ranking, 2, 4).tolist() == [2, 3, 4, 1]
    assert roc_auc(rank_scores(ranking, 2, 4), pos) == pytest.approx(0.75)


def test_a_model_below_its_bar_is_refused(tiny_zoo_model):
    import dataclasses

    strict = dataclasses.replace(tiny_zoo_model, accuracy=0.5)
    with pytest.raises(PipelineError, match="below its bar 0.99: refused as ground truth"):
        strict.require_truth()


def test_the_cache_returns_the_same_weights(tiny_zoo_model):
    import torch

    from interp_heads.zoo.cache import zoo_model

    again = zoo_model(tiny_zoo_model.recipe)
    assert again.cached and again.weights_sha256 == tiny_zoo_model.weights_sha256
    for (k, a), (_, b) in zip(again.model.state_dict().items(),
                              tiny_zoo_model.model.state_dict().items(), strict=True):  # fmt: skip
        assert torch.equal(a, b), k
    assert tiny_zoo_model.accuracy >= 0.99  # the tiny zoo reaches its own bar
