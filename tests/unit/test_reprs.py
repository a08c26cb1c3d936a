"""What a user sees when printing or displaying results: short reprs, tidy frames, offline figures."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import torch

import interp_heads
from interp_heads.attribution.scores import HeadScores
from interp_heads.tasks import load_task

DATA = Path(__file__).parents[1] / "data"


def _scores() -> HeadScores:
    s = torch.arange(30 * 9, dtype=torch.float32).reshape(30, 9) / 100
    s[3, 2] = -9.0  # the largest |score|
    prov = {"n_examples": 24, "split_half": {"matrix": [[0.1] * 9] * 30}, "example_ids": ["a"] * 24}
    return HeadScores(s, "atp", "knowledge_recall", "logit diff", prov)


def test_head_scores_print_is_one_short_line():
    text = repr(_scores())
    assert str(_scores()) == text
    assert text.startswith("HeadScores(method='atp', task='knowledge_recall', 30x9 heads, 24 ex")
    assert "top: L3H2 -9, L29H8 2.69, L29H7 2.68, L29H6 2.67, L29H5 2.66)" in text
    assert "tensor" not in text and "split_half" not in text and len(text) < 200


@pytest.fixture(autouse=True)
def _new_notebook_session():
    """Each test is a fresh kernel: its first figure carries plotly.js."""
    from interp_heads.figures.notebook import new_session

    new_session()


def test_head_scores_display_carries_plotly_js_not_a_cdn_link():
    from plotly.offline import get_plotlyjs

    html = _scores()._repr_html_()
    assert get_plotlyjs() in html  # the bundle itself, inline: it draws offline
    rest = html.replace(get_plotlyjs(), "")
    assert "cdn.plot.ly" not in rest and "<script src" not in rest
    assert "HeadScores:" in html and "<table" in html


def test_task_repr_and_tidy_frame():
    task = load_task(str(DATA / "tiny_echo.jsonl"))
    text = repr(task)
    assert text == (
        "Task('tiny_echo', 16 examples, fmt='auto', corrupted=True, ids=['t0', 't1', 't2', ...])"
    )
    rows = [json.loads(line) for line in (DATA / "tiny_echo.jsonl").read_text().splitlines()]
    frame = task.to_frame()
    assert len(frame) == 16 and list(frame["id"]) == [r["id"] for r in rows]
    for col in ("prompt", "answer", "question", "corrupted_prompt", "corrupted_answer"):
        assert list(frame[col]) == [r[col] for r in rows], col
    assert set(frame["task"]) == {"tiny_echo"}
    assert list(task.subset(n=0).to_frame().columns)[:3] == ["task", "id", "prompt"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    from interp_heads.cli import main

    out = tmp_path_factory.mktemp("reprs") / "run"
    assert main(["run", "--config", str(DATA / "tiny.toml"), "--out", str(out), "--quiet"]) == 0
    return out


def test_loaded_run_repr_summary_and_figure(run_dir):
    run = interp_heads.load_run(run_dir)
    text = repr(run)
    assert text.startswith(f"LoadedRun({str(run_dir)!r}, status='complete', model='tiny'")
    assert "tasks=['tiny_echo']" in text and "config_digest" not in text and len(text) < 400
    want = pd.read_parquet(run_dir / "summary.parquet")
    pd.testing.assert_frame_equal(run.summary(), want)
    fig = run.figure()
    topk = want[(want.selection == "TopK") & (want.metric == want.metric.iloc[0])]
    ys = [list(t.y) for t in fig.data if t.name and "TopK" in t.name]
    assert any(
        len(y) >= len(topk) and set(round(v, 6) for v in topk["mean"]) <= {round(v, 6) for v in y}
        for y in ys
    )
    from plotly.offline import get_plotlyjs

    assert get_plotlyjs() in run._repr_html_()


def test_load_run_refuses_a_missing_folder(tmp_path):
    with pytest.raises(ValueError, match="no such run folder"):
        interp_heads.load_run(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()  # a folder that holds no run is refused, not an empty run
    with pytest.raises(ValueError, match="not a run folder"):
        interp_heads.load_run(tmp_path / "empty")


def test_sweep_result_repr_is_one_line():
    from interp_heads.sweep.config import SweepConfig
    from interp_heads.sweep.result import SweepResult

    rows = [
        {"task": "t", "selection": sel, "seed": seed, "k": k, "metric": "accuracy", "value": 1.0}
        for sel, k, seed in [
            ("baseline", 0, 0),
            ("TopK", 4, 0),
            ("RandomK", 4, 0),
            ("RandomK", 4, 1),
        ]
        for _ in range(3)  # three examples each
    ]
    result = SweepResult(pd.DataFrame(rows), pd.DataFrame(), SweepConfig(ks=[4]))
    assert repr(result) == (
        "SweepResult(tasks=['t'], 4 conditions, 12 records, ks=[4], "
        "selections=['baseline', 'TopK', 'RandomK'], metrics=['accuracy'])"
    )
