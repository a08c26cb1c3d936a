"""HeadScores: ranking, tidy table, file round-trips, heatmaps and cross-task overlap."""

from __future__ import annotations

import plotly.graph_objects as go
import pytest
import torch

from interp_heads.attribution import HeadScores, overlap, overlap_heatmap


@pytest.fixture
def hs():
    scores = torch.tensor([[0.1, -0.9, 0.0], [0.5, 0.2, -0.3]])
    return HeadScores(
        scores, "exact", "retrieval", "logit diff", {"n_examples": 2, "example_ids": ["a", "b"]}
    )


def test_top_and_rank_by_abs_and_signed(hs):
    assert hs.top(3) == [(0, 1), (1, 0), (1, 2)]
    assert hs.top_labels(2) == ["L0H1", "L1H0"]
    assert hs.top(2, by="signed") == [(1, 0), (1, 1)]
    assert hs.rank().tolist() == [[5, 1, 6], [2, 4, 3]]
    assert hs.rank(by="signed")[0, 1] == 6
    assert hs.top(0) == [] and len(hs.top(100)) == 6
    with pytest.raises(ValueError):
        hs.top(2, by="size")


def test_refined_heads_rank_first(hs):
    hs.refined = torch.tensor([[False, False, False], [False, True, False]])
    assert hs.top(3) == [(1, 1), (0, 1), (1, 0)]


def test_to_frame_is_tidy(hs):
    f = hs.to_frame()
    assert list(f.columns)[:7] == ["task", "method", "layer", "head", "label", "score", "rank"]
    assert len(f) == 6 and f.loc[f["rank"] == 1, "label"].item() == "L0H1"
    back = HeadScores.from_frame(f)
    assert (
        torch.equal(back.scores, hs.scores) and back.method == "exact" and back.task == "retrieval"
    )


@pytest.mark.parametrize("suffix", [".json", ".parquet"])
def test_save_load_round_trip(hs, tmp_path, suffix):
    hs.refined = torch.tensor([[True, False, False], [False, False, False]])
    hs.scores[0, 2] = float("nan")
    path = hs.save(tmp_path / f"s{suffix}")
    back = HeadScores.load(path)
    assert torch.allclose(back.scores, hs.scores, equal_nan=True)
    assert back.method == hs.method and back.task == hs.task and back.target == hs.target
    assert back.provenance == hs.provenance
    assert torch.equal(back.refined, hs.refined)
    assert back.top(6) == hs.top(6)


def test_bad_files(hs, tmp_path):
    with pytest.raises(ValueError, match="extension"):
        hs.save(tmp_path / "s.csv")
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(ValueError, match="HeadScores"):
        HeadScores.load(tmp_path / "x.json")
    # the library's own check, or the jaxtyping shape check when runtime checks are on (make test)
    with pytest.raises((ValueError, TypeError), match="n_layers|layer head"):
        HeadScores(torch.zeros(3), "m", "t")


def test_heatmap_traces(hs):
    fig = hs.heatmap()
    assert isinstance(fig, go.Figure) and len(fig.data) == 1
    trace = fig.data[0]
    assert trace.type == "heatmap" and len(trace.z) == 2 and len(trace.z[0]) == 3
    assert trace.customdata[0][1][0] == "L0H1" and int(trace.customdata[0][1][1]) == 1
    assert "rank" in trace.hovertemplate and "score" in trace.hovertemplate
    assert fig.layout.xaxis.title.text == "head" and fig.layout.yaxis.title.text == "layer"


def test_overlap_jaccard_and_heatmap(hs):
    other = HeadScores(torch.tensor([[0.0, -1.0, 0.0], [0.0, 0.0, 0.9]]), "exact", "math")
    frame = overlap({"retrieval": hs, "math": other}, k=2)
    # top-2: {L0H1, L1H0} vs {L0H1, L1H2}: 1 shared of 3
    assert frame.loc["retrieval", "math"] == pytest.approx(1 / 3)
    assert frame.loc["math", "math"] == 1.0
    fig = overlap_heatmap(frame)
    assert fig.data[0].type == "heatmap" and list(fig.data[0].x) == ["retrieval", "math"]
    assert "Top-2" in fig.layout.title.text
