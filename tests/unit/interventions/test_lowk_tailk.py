"""LowK is the least |importance|; the signed tail (the lowest signed scores: removal estimated
to help most) is TailK, a selection of its own. Checked against orders written by hand."""

from __future__ import annotations

import torch

from interp_heads.attribution.scores import HeadScores
from interp_heads.interventions.selections import make_selections

# scores by hand: |.| order (0,1) 5, (0,0) 3, (1,1) 0.2, (1,0) 0.1; signed order 3, 0.1, -0.2, -5
SCORES = torch.tensor([[3.0, -5.0], [0.1, -0.2]])


def _select(rank_by: str, k: int) -> dict:
    scores = HeadScores(SCORES, "ablation_atp", "t", provenance={"rank_by": rank_by})
    sels = make_selections(["topk", "lowk", "tailk"], scores, 2, 2)
    return {s.display: s.select(k) for s in sels}


def test_lowk_is_the_least_magnitude_and_tailk_the_lowest_signed_score():
    for rank_by in ("signed", "abs"):  # the ranking's own order does not move either
        got = _select(rank_by, 2)
        assert got["LowK"] == [(1, 0), (1, 1)]  # 0.1 and -0.2: nearest zero
        assert got["TailK"] == [(0, 1), (1, 1)]  # -5 and -0.2: removal helps most
    # TopK follows the ranking's direction
    assert _select("signed", 1)["TopK"] == [(0, 0)] and _select("abs", 1)["TopK"] == [(0, 1)]


def test_a_signed_ranking_read_from_its_end_was_the_signed_tail_not_the_least_important():
    scores = HeadScores(SCORES, "ablation_atp", "t", provenance={"rank_by": "signed"})
    ranked_last = list(reversed(scores.top(4)))[:2]  # what LowK was before
    assert ranked_last == _select("signed", 2)["TailK"] != _select("signed", 2)["LowK"]


def test_a_bare_list_of_heads_has_no_scores_both_read_it_from_its_end():
    ranking = [(0, 0), (1, 1), (0, 1), (1, 0)]
    sels = make_selections(["lowk", "tailk"], ranking, 2, 2)
    assert [s.select(2) for s in sels] == [[(1, 0), (0, 1)]] * 2
