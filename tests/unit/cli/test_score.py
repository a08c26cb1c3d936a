"""``interp-heads score RUN --metrics ...``: answer metrics over a run folder's stored generations."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from interp_heads.cli import main

ROWS = [
    dict(task="t", selection="baseline", seed=0, k=0, example_id="a", heads="",
         generation="Paris\nmore", question="Capital of France?", answer="Paris"),
    dict(task="t", selection="TopK", seed=0, k=2, example_id="a", heads="L0H1,L1H2",
         generation="Berlin", question="Capital of France?", answer="Paris"),
]  # fmt: skip


def _run_folder(tmp_path, rows=ROWS):
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text(json.dumps({"config_digest": "x"}))
    (run / "generations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run


def test_score_writes_one_row_per_stored_generation(tmp_path, capsys):
    run = _run_folder(tmp_path)
    assert main(["score", str(run), "--metrics", "chrf"]) == 0
    table = pd.read_csv(run / "scores" / "chrf.csv")
    assert list(table.columns) == [
        "task", "selection", "seed", "k", "metric", "label", "example_id", "value"
    ]  # fmt: skip
    assert table["selection"].tolist() == ["baseline", "TopK"]
    exact, wrong = table["value"]
    assert exact == pytest.approx(1.0) and wrong < 0.5  # first line "Paris" vs "Berlin"
    assert "wrote" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv_tail", "message"),
    [
        (["--metrics", "accuracy"], "aliases"),
        (["--metrics", "bogus"], "unknown metric"),
    ],
)
def test_score_bad_input_is_one_line(tmp_path, capsys, argv_tail, message):
    run = _run_folder(tmp_path)
    assert main(["score", str(run), *argv_tail]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_score_needs_a_run_folder_with_generations(tmp_path, capsys):
    assert main(["score", str(tmp_path), "--metrics", "chrf"]) == 2
    assert "not a run folder" in capsys.readouterr().err
    run = _run_folder(tmp_path)
    (run / "generations.jsonl").unlink()
    assert main(["score", str(run), "--metrics", "chrf"]) == 2
    assert "no generations.jsonl" in capsys.readouterr().err
