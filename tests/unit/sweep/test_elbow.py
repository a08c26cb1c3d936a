"""``k = "elbow"``: the elbow index equals the Cognitive Mirrors code's own, and the sweep masks it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from interp_heads.attribution.scores import HeadScores
from interp_heads.errors import InputError
from interp_heads.sweep.elbow import elbow_index, elbow_k
from interp_heads.sweep.loop import SweepConfig, plan_conditions


def seed_find_elbow_point(y):
    """``find_elbow_point`` from sihuo-design/CognitiveMirrors ``get_importance.py``, verbatim."""
    x = np.arange(len(y))
    y = np.array(y)
    line_vec = np.array([x[-1] - x[0], y[-1] - y[0]])
    line_vec = line_vec / np.linalg.norm(line_vec)
    vecs = np.stack([x - x[0], y - y[0]], axis=1)
    proj_lengths = np.dot(vecs, line_vec)
    proj_points = np.outer(proj_lengths, line_vec)
    dists = np.linalg.norm(vecs - proj_points, axis=1)
    return np.argmax(dists)


@pytest.mark.parametrize("seed", range(6))
def test_elbow_index_equals_the_seed_code(seed):
    rng = np.random.default_rng(seed)
    y = np.sort(np.abs(rng.standard_cauchy(270)))[::-1] * 10.0 ** rng.integers(-4, 2)
    assert elbow_index(y.tolist()) == int(seed_find_elbow_point(y))


def test_a_planted_corner_is_the_elbow():
    y = [10.0 - i for i in range(6)] + [5.0 - 0.01 * i for i in range(1, 30)]
    assert elbow_index(y) == 5


def test_elbow_k_reads_the_ranking_order_and_the_plan_masks_it():
    imp = torch.tensor([5.0, 4.0, 3.0, 0.2, 0.15, 0.1, 0.05, 0.0] * 2)[torch.randperm(16)]
    scores = HeadScores(-imp.reshape(4, 4), "probe", "t")  # ranked by |score|
    assert elbow_k(scores) == 6  # six heads of importance >= 3, then the flat tail
    plan = plan_conditions(SweepConfig(ks=[2], elbow=True, seeds=1), scores, 4, 4, "t")
    assert sorted({k for _, k, _, _ in plan}) == [0, 2, 6]
    assert plan_conditions(SweepConfig(ks=[2], seeds=1), scores, 4, 4, "t")[-1][1] == 2
    with pytest.raises(InputError, match="needs a ranking with scores"):
        elbow_k([(0, 0), (0, 1)])
