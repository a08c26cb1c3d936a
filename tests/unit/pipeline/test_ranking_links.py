"""``--ranking`` reads only plain files: a run folder's ``ranking.csv`` (or the file named) that
is a link is refused in one line, and the scores read beside a ranking are never a link or a FIFO
(which would block the read)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.helpers import DATA, ROOT, cli

TASK = str(DATA / "tiny_echo.jsonl")
RANKING = "task,rank,label\n" + "".join(f"tiny_echo,{i + 1},L{i // 4}H{i % 4}\n" for i in range(8))


@pytest.fixture
def no_model_load(monkeypatch):
    """The model loader replaced: a refusal must come before it."""
    import interp_heads.pipeline.experiment as experiment

    def load(*_, **__):
        raise AssertionError("the model was loaded first")

    monkeypatch.setattr(experiment, "load_any_model", load)


def _ablate(tmp_path, ranking) -> list:
    return ["ablate", "--model", "tiny", "--task", TASK, "--ranking", ranking, "--k", "1",
            "--no-filter", "--out", tmp_path / "out"]  # fmt: skip


@pytest.mark.parametrize("named", ["folder", "file"])
def test_a_linked_ranking_csv_is_refused_in_one_line(named, no_model_load, tmp_path, capfd):
    (tmp_path / "elsewhere.csv").write_text(RANKING)
    folder = tmp_path / "ranked"
    folder.mkdir()
    (folder / "ranking.csv").symlink_to(tmp_path / "elsewhere.csv")
    target = folder if named == "folder" else folder / "ranking.csv"
    assert cli(*_ablate(tmp_path, target)) == 2
    err = capfd.readouterr().err
    assert err.count("\n") == 1 and "ranking.csv" in err and "symbolic link" in err, err
    assert not (tmp_path / "out").exists()


def test_a_folder_of_no_ranking_says_what_was_expected(no_model_load, tmp_path, capfd):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("mine")
    assert cli(*_ablate(tmp_path, tmp_path / "notes")) == 2
    err = capfd.readouterr().err
    assert err.count("\n") == 1 and "without ranking.csv or attribution.parquet" in err, err
    assert "--ranking expects the folder 'interp-heads attribute --out DIR'" in err


@pytest.mark.parametrize("kind", ["fifo", "link"])
def test_scores_beside_a_ranking_are_read_only_when_plain(kind, tmp_path):
    """A FIFO (or a link) as ``attribution/<task>.json`` beside a ranking is passed over, not
    read (reading a FIFO nobody writes blocks forever: run in a subprocess with a timeout)."""
    folder = tmp_path / "ranked"
    (folder / "attribution").mkdir(parents=True)
    (folder / "ranking.csv").write_text(RANKING)
    entry = folder / "attribution" / "tiny_echo.json"
    if kind == "fifo":
        os.mkfifo(entry)
    else:
        (tmp_path / "outside.json").write_text("{}")
        entry.symlink_to(tmp_path / "outside.json")
    code = (
        "from interp_heads.pipeline.rankings import stored_scores\n"
        f"print(stored_scores({str(folder)!r}, 'tiny_echo'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0 and done.stdout.strip() == "None", done.stderr
