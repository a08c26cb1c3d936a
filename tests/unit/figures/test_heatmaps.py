"""The layer x head heatmap shows the ranking's own order: its outlined top heads, its hover
ranks and the run page's table beside it agree with ``HeadScores.top`` (signed for the methods
that rank by signed score)."""

from __future__ import annotations

import torch

from interp_heads.attribution.scores import HeadScores
from interp_heads.figures.heatmaps import head_heatmap

# two large negative scores (a head whose ablation helps the task) and small positive ones
SCORES = torch.tensor([[-5.0, 0.3, -4.0, 0.1], [0.2, 0.05, 0.4, 0.01]])


def signed_scores() -> HeadScores:
    return HeadScores(SCORES, "ablation_atp", "t", provenance={"rank_by": "signed"})


def outlined(fig) -> set[tuple[int, int]]:
    return {(round(s.y0 + 0.5), round(s.x0 + 0.5)) for s in fig.layout.shapes}


def hover_ranks(fig) -> dict[str, int]:
    return {label: rank for row in fig.data[0].customdata for label, rank in row}


def test_large_negative_scores_are_not_outlined_as_top():
    scores = signed_scores()
    fig = head_heatmap(scores, top=2)
    assert outlined(fig) == {(1, 2), (0, 1)} == set(scores.top(2))
    assert hover_ranks(fig)["L1H2"] == 1 and hover_ranks(fig)["L0H0"] == 8


def test_heatmap_method_follows_the_ranking():
    assert hover_ranks(signed_scores().heatmap())["L0H0"] == 8


def test_a_ranking_read_back_from_its_table_keeps_its_order():
    frame = signed_scores().to_frame()
    again = HeadScores.from_frame(frame)
    assert again.rank_by == "signed"
    assert again.top(3) == signed_scores().top(3)


def test_run_page_heatmap_outlines_the_tables_top_heads():
    from interp_heads.report.run import make_figures

    frame = signed_scores().to_frame()
    fig = make_figures({"attribution": frame, "manifest": {"ks": [2]}})["heatmap_t"]
    table_top = frame.sort_values("rank").head(2)
    assert outlined(fig) == set(zip(table_top["layer"], table_top["head"], strict=True))
