"""Limits on what the tool reads and writes, checked piece by piece (no CLI, tiny model).

Text too long to be a prompt, numbers that are not finite, files that are not regular, temporary
names a user may also use, CSV cells a spreadsheet would run, a COMET checkpoint that does not
load, an empty config, and what a task row's ``task`` field means.
"""

from __future__ import annotations

import argparse
import io
import json
import os
from pathlib import Path

import pandas as pd
import pytest

from interp_heads.errors import PipelineError
from tests.helpers import ROOT

DATA = ROOT / "tests" / "data"
ROW = json.loads((DATA / "tiny_echo.jsonl").read_text().splitlines()[0])


# --------------------------------------------------------------------------- long text
def test_a_20_mb_prompt_is_refused_while_the_file_is_read(tmp_path):
    from interp_heads.tasks import TaskFormatError
    from interp_heads.tasks.io import read_task_file

    path = tmp_path / "big.jsonl"
    path.write_text(json.dumps({**ROW, "prompt": "x " * 10_000_000}) + "\n")
    with pytest.raises(TaskFormatError, match="20,000,000 characters; at most 1,000,000"):
        read_task_file(path)


def test_a_prompt_far_beyond_the_context_is_refused_untokenised(tiny, monkeypatch):
    from interp_heads.config.validation import check_prompt_lengths
    from interp_heads.tasks.schema import Example, Task

    task = Task(name="t", examples=[Example(id="1", task="t", prompt="ab " * 200_000, answer="x")])
    calls = []
    monkeypatch.setattr(type(tiny.tokenizer), "__call__", lambda *a, **k: calls.append(a))
    with pytest.raises(PipelineError, match="prompt is at least .* tokens"):
        check_prompt_lengths(tiny, task, "plain", 4)
    assert calls == []  # 600,000 characters are at least 600,000 / 13 tokens: no need to count


# --------------------------------------------------------------------------- numbers
@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "NaN", "1e999"])
def test_flags_refuse_non_finite_numbers(text):
    from interp_heads.config.validation import finite_float

    with pytest.raises(argparse.ArgumentTypeError, match="finite"):
        finite_float(text)
    assert finite_float("-0.5") == -0.5


@pytest.mark.parametrize(
    "kw", [{"scale_factor": float("nan")}, {"scale_factor": float("inf")}, {"seed": 2**64}]
)
def test_configs_refuse_non_finite_numbers_and_seeds_torch_cannot_take(kw):
    from interp_heads.config.run_config import RunConfig

    with pytest.raises(PipelineError, match=next(iter(kw))):
        RunConfig(**kw)
    assert RunConfig(seed=2**64 - 1).seed == 2**64 - 1  # torch.manual_seed's largest


def test_the_sweep_config_refuses_a_non_finite_scale():
    from interp_heads.sweep.config import SweepConfig

    with pytest.raises(ValueError, match="scale_factor must be a finite number"):
        SweepConfig(ks=[1], options={"scale_factor": float("nan")})


# --------------------------------------------------------------------------- files
@pytest.mark.parametrize("kind", ["folder", "fifo", "device", "large"])
def test_only_regular_files_of_a_sane_size_are_read(kind, tmp_path):
    from interp_heads.config.validation import check_regular_file

    path = {"folder": tmp_path, "device": Path("/dev/zero")}.get(kind, tmp_path / "f")
    if kind == "fifo":
        os.mkfifo(path)
    if kind == "large":
        path.write_bytes(b"x" * 2048)
    want = {"folder": "is a folder", "large": "2,048 bytes; at most 1,024"}.get(
        kind, "not a regular"
    )
    with pytest.raises(PipelineError, match=want):
        check_regular_file(path, "config", max_bytes=1024)


def test_an_empty_config_is_refused(tmp_path):
    from interp_heads.config.run_config import RunConfig

    for text in ("", "# nothing\n", "[sweep]\n", "[run]\n"):
        (tmp_path / "c.toml").write_text(text)
        with pytest.raises(PipelineError, match="sets nothing; a config must set at least one"):
            RunConfig.from_toml(tmp_path / "c.toml")


def test_temporary_names_are_the_tools_own(tmp_path):
    from interp_heads.store import temp_path, temp_pid

    tmp = temp_path(tmp_path / "summary.csv")
    assert tmp.parent == tmp_path and temp_pid(tmp.name) == os.getpid()
    for mine in (
        ".mynotes.tmp4194303",
        ".x.json.tmp12",
        "a.interp-heads-tmp12",
        ".a.interp-heads-tmp",
    ):
        assert temp_pid(mine) is None, mine


# --------------------------------------------------------------------------- CSV cells
def test_csv_cells_that_would_run_as_formulas_are_quoted_numbers_stay():
    from interp_heads.store.csv_cells import csv_restore, csv_safe

    frame = pd.DataFrame(
        {
            "task": ['=HYPERLINK("http://x","y")', "+1+1", "-cmd", "@SUM(A1)", "plain", "-0.5"],
            "score": [-0.5, 1.0, -2.0, 0.0, 3.0, 4.0],
        }
    )
    text = csv_safe(frame).to_csv(index=False)
    cells = pd.read_csv(io.StringIO(text))
    assert list(cells.task[:4]) == ['\'=HYPERLINK("http://x","y")', "'+1+1", "'-cmd", "'@SUM(A1)"]
    assert list(cells.task[4:]) == ["plain", "-0.5"] and list(cells.score) == list(frame.score)
    pd.testing.assert_frame_equal(csv_restore(cells), frame)


# --------------------------------------------------------------------------- COMET checkpoints
@pytest.mark.parametrize("spec", ["/etc/passwd", str(DATA)])
def test_a_comet_checkpoint_named_by_the_user_that_cannot_load_is_refused(spec, capsys):
    from interp_heads.metrics import MetricUnavailable, resolve_metrics

    with pytest.raises(MetricUnavailable):
        resolve_metrics(["comet"], comet_model=spec)  # no stand-in for a file named on purpose
    assert "stand-in" not in capsys.readouterr().err


# --------------------------------------------------------------------------- task files
def test_the_file_stem_names_the_task_as_the_docs_say(tmp_path):
    from interp_heads.tasks.io import read_task_file

    path = tmp_path / "antonyms.jsonl"
    path.write_text(json.dumps({**ROW, "task": "opposites"}) + "\n")
    task = read_task_file(path)
    assert task.name == "antonyms" and task.examples[0].task == "opposites"
    row = next(line for line in (ROOT / "docs" / "tasks.md").read_text().splitlines()
               if line.startswith("| `task` |"))  # fmt: skip
    assert "does not name the task: the file stem does" in row
