"""``report`` and ``load_run`` on folders edited by hand: one line (exit 2) or a page, never an
internal error; task names read back as written ('NA', '007')."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from interp_heads import load_run
from interp_heads.errors import InputError
from tests.helpers import DATA, TINY_CONFIG, cli, finished_run

TASK = DATA / "tiny_echo.jsonl"
CONFIG = TINY_CONFIG
SUFFICIENT = CONFIG.replace("ks = [2, 4, 8]", "ks = [2]").replace("seeds = 2", "seeds = 1")
SUFFICIENT += 'sufficiency = true\nsufficiency_seeds = 1\nsufficiency_metrics = ["accuracy"]\n'


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A finished tiny run with the kept-set curves (``sufficiency = true``)."""
    return finished_run(tmp_path_factory.mktemp("finished"), SUFFICIENT)


@pytest.fixture
def run(finished, tmp_path) -> Path:
    shutil.copytree(finished, tmp_path / "run")
    return tmp_path / "run"


def _report(run: Path, capsys) -> tuple[int, str]:
    capsys.readouterr()
    code = cli("report", run)
    err = capsys.readouterr().err
    assert "internal error" not in err, err
    return code, err


@pytest.mark.parametrize("column", ["k", "fraction", "f", "mean", "curve"])
def test_text_in_the_sufficiency_curves_is_one_line_naming_the_file(run, capsys, column):
    path = run / "heads" / "sufficiency_curves.csv"
    frame = pd.read_csv(path)
    assert column in frame.columns
    frame[column] = "lots"
    frame.to_csv(path, index=False)
    code, err = _report(run, capsys)
    assert code == 0 or ("sufficiency_curves.csv" in err and err.count("\n") == 1), err


def test_many_metric_names_still_draw_the_figure(run, capsys):
    path = run / "summary.parquet"
    frame = pd.read_parquet(path)
    frame = frame[frame.metric == "chrf"]
    parts = [frame.assign(metric=f"m{i}", label=f"metric {i}") for i in range(40)]
    pd.concat(parts, ignore_index=True).to_parquet(path)
    code, _ = _report(run, capsys)
    assert code == 0
    assert load_run(run).figure() is not None


def test_a_manifest_that_is_a_list_is_one_line(run, capsys):
    (run / "manifest.json").write_text("[1, 2]")
    code, err = _report(run, capsys)
    assert code == 2 and "manifest.json" in err and err.count("\n") == 1
    with pytest.raises(InputError, match="manifest.json"):
        load_run(run)


def test_load_run_of_no_path_is_a_type_error(untyped):
    with pytest.raises(TypeError, match="run folder's path"):
        load_run(None)


def test_load_run_of_a_folder_that_is_not_a_run_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="not a run folder"):
        load_run(tmp_path)


# --------------------------------------------------------------------------- names as written
@pytest.fixture(scope="module")
def odd_names(tmp_path_factory) -> tuple[Path, dict]:
    """A finished run of two tasks named 'NA' and '007'."""
    root = tmp_path_factory.mktemp("names")
    rows = [json.loads(line) for line in TASK.read_text().splitlines() if line.strip()]
    files = {}
    for name in ("NA", "007"):
        files[name] = root / f"{name}.jsonl"
        files[name].write_text("".join(json.dumps({**r, "task": name}) + "\n" for r in rows))
    text = CONFIG.replace(f'tasks = ["{TASK}"]', f'tasks = ["{files["NA"]}", "{files["007"]}"]')
    (root / "c.toml").write_text(text.replace("ks = [2, 4, 8]", "ks = [2]"))
    assert cli("run", "--config", root / "c.toml", "--out", root / "run", "--quiet") == 0
    return root / "run", files


def test_task_names_na_and_007_are_read_back_as_written(odd_names):
    out, _ = odd_names
    run = load_run(out)
    for piece in ("baseline", "summary", "significance", "attribution", "generations"):
        assert set(run[piece]["task"]) == {"NA", "007"}, piece
    assert "007" in (out / "index.html").read_text()


def test_ablate_reads_a_ranking_of_tasks_named_na_and_007(odd_names, tmp_path):
    out, files = odd_names
    for name, path in files.items():
        argv = ("ablate", "--model", "tiny", "--task", path, "--ranking", out, "--k", "2")
        argv += ("--seeds", "1", "--no-filter", "--max-new-tokens", "2", "--metrics", "chrf")
        assert cli(*argv, "--out", tmp_path / name, "--quiet") == 0, name
