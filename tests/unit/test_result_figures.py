"""Every result object draws itself with ``.figure()`` (a Plotly figure), as a notebook expects."""

from __future__ import annotations

import plotly.graph_objects as go
import pytest
import torch


def test_head_scores_figure_and_its_older_name():
    from interp_heads.attribution import HeadScores

    scores = HeadScores(torch.tensor([[0.1, -0.9], [0.5, 0.2]]), "atp", "t")
    assert isinstance(scores.figure(), go.Figure)
    assert scores.heatmap().to_dict() == scores.figure().to_dict()


def test_baseline_result_figure_counts_the_answers():
    from interp_heads.tasks.baseline import BaselineResult

    res = BaselineResult("t", ["a", "b", "c"], ["x", "y", "z"], [True, False, True], fmt="plain")
    fig = res.figure()
    assert list(fig.data[0].y) == [2, 1] and "accuracy 0.67 on 3 examples" in fig.layout.title.text


@pytest.mark.parametrize(
    "home, name",
    [
        ("interp_heads.sweep.result", "SweepResult"),
        ("interp_heads.analysis.sufficiency_result", "SufficiencyResult"),
        ("interp_heads.report.run", "LoadedRun"),
    ],
)
def test_the_other_results_have_a_figure(home, name):
    import importlib

    assert callable(getattr(getattr(importlib.import_module(home), name), "figure", None))
