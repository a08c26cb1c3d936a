"""The run folder's rules at every depth: a link planted anywhere below a run folder
(``heads/sufficiency``, ``heads/sufficient_sets``) is refused before anything is written, no
delete follows one, ``--force`` never deletes a file the new run reads nor the marker."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from interp_heads.config.run_config import RunConfig
from interp_heads.errors import PipelineError
from interp_heads.run import Manifest
from interp_heads.store import lifecycle
from interp_heads.store.conditions import ConditionStore
from interp_heads.store.folder import RunFolder
from interp_heads.store.layout import MARKER
from tests.helpers import DATA, TINY_CONFIG, cli

ECHO = str(DATA / "tiny_echo.jsonl")


def _victim(tmp_path: Path) -> tuple[Path, Path]:
    """A folder outside the run holding a ``conditions/config.json`` that must stay "precious"."""
    victim = tmp_path / "V"
    (victim / "conditions").mkdir(parents=True)
    (victim / "conditions" / "config.json").write_text("precious")
    return victim, victim / "conditions" / "config.json"


def _planted(tmp_path: Path, sub: str) -> tuple[Path, Path]:
    run = tmp_path / "R"
    (run / "heads").mkdir(parents=True)
    (run / MARKER).write_text(json.dumps({"tool": "interp_heads"}))
    victim, precious = _victim(tmp_path)
    os.symlink(victim, run / "heads" / sub)
    return run, precious


@pytest.mark.parametrize(
    ("sub", "setting"),
    [
        ("sufficiency", "sufficiency = true"),
        ("sufficient_sets", "sufficiency = true\nsufficiency_search = true"),
    ],
)
def test_a_run_refuses_a_link_below_its_own_folders_before_writing(tmp_path, capsys, sub, setting):
    run, precious = _planted(tmp_path, sub)
    (tmp_path / "c.toml").write_text(TINY_CONFIG + setting + "\n")
    assert cli("run", "--config", tmp_path / "c.toml", "--out", run, "--quiet") == 2
    err = capsys.readouterr().err
    assert "symbolic link" in err and sub in err and len(err.strip().splitlines()) == 1
    assert precious.read_text() == "precious"
    assert sorted(p.name for p in precious.parent.iterdir()) == ["config.json"]


def test_the_check_walks_every_depth_of_the_run_folder(tmp_path):
    run = tmp_path / "R"
    deep = run / "heads" / "sufficient_sets" / "task_a"
    deep.mkdir(parents=True)
    victim, _ = _victim(tmp_path)
    os.symlink(victim / "conditions", deep / "conditions")
    with pytest.raises(PipelineError, match="task_a/conditions"):
        RunFolder(run).check_links()
    os.unlink(deep / "conditions")
    RunFolder(run).check_links()  # a real folder there: fine


def test_a_sweep_store_under_a_linked_folder_writes_nothing(tmp_path):
    """The sweep's own check, for a link planted after the run folder was claimed."""
    run, precious = _planted(tmp_path, "sufficiency")
    config = RunConfig.from_dict({"model": "tiny", "tasks": [ECHO]})
    with pytest.raises(PipelineError, match="symbolic link"):
        ConditionStore(run / "heads" / "sufficiency", config)
    assert precious.read_text() == "precious"
    # a marker planted in the linked folder does not make it a run folder of its own
    (precious.parent.parent / MARKER).write_text("{}")
    with pytest.raises(PipelineError, match="symbolic link"):
        ConditionStore(run / "heads" / "sufficiency", config)


def test_no_delete_follows_a_nested_link(tmp_path):
    run, precious = _planted(tmp_path, "sufficiency")
    assert not RunFolder(run / "heads" / "sufficiency").delete(precious.parent / "config.json")
    assert not RunFolder(run).delete(run / "heads" / "sufficiency" / "conditions" / "config.json")
    assert precious.read_text() == "precious"
    real = run / "heads" / "cross" / "t" / "conditions"
    real.mkdir(parents=True)
    (real / "x.json").write_text("{}")
    assert RunFolder(run).delete(real / "x.json") and not (real / "x.json").exists()


def _retiring(run: Path, outputs: list[str], config: RunConfig):
    folder = RunFolder(run)
    manifest = Manifest.from_dict({"files": {"retiring": outputs, "outputs": []}})
    from interp_heads.pipeline.record import RunRecord

    exp = SimpleNamespace(folder=folder, config=config, tasks={})
    return exp, RunRecord(manifest=manifest)  # the run's inputs, and its record


def test_force_never_deletes_the_ranking_the_new_run_reads_nor_the_marker(tmp_path):
    run = tmp_path / "g6"
    run.mkdir()
    for name in ("ranking.csv", "attribution.parquet", "summary.csv", MARKER):
        (run / name).write_text("x")
    config = RunConfig.from_dict(
        {"model": "tiny", "tasks": [ECHO], "ranking": str(run / "ranking.csv")}
    )
    exp, record = _retiring(run, ["ranking.csv", "summary.csv", MARKER, "manifest.json"], config)
    lifecycle.finish_retiring(exp, record)
    assert (run / "ranking.csv").exists() and (run / MARKER).exists()
    assert not (run / "summary.csv").exists()  # an earlier output nothing reads: retired
    # a ranking given as the run folder itself keeps its ranking tables too
    config = RunConfig.from_dict({"model": "tiny", "tasks": [ECHO], "ranking": str(run)})
    exp, record = _retiring(run, ["ranking.csv", "attribution.parquet"], config)
    lifecycle.finish_retiring(exp, record)
    assert (run / "ranking.csv").exists() and (run / "attribution.parquet").exists()


def test_force_keeps_a_task_file_inside_the_run_folder(tmp_path):
    run = tmp_path / "r"
    run.mkdir()
    task = run / "my_task.jsonl"
    task.write_text(Path(ECHO).read_text())
    config = RunConfig.from_dict({"model": "tiny", "tasks": [str(task)]})
    lifecycle.finish_retiring(*_retiring(run, ["my_task.jsonl"], config))
    assert task.exists()


def test_a_rerun_with_force_reading_its_own_ranking_works_twice(tmp_path):
    """The issue's command: a finished run rerun with ``--force`` and its own ``ranking.csv``."""
    (tmp_path / "a.toml").write_text(TINY_CONFIG.replace("ks = [2, 4, 8]", "ks = [2]"))
    assert cli("run", "--config", tmp_path / "a.toml", "--out", tmp_path / "g6", "--quiet") == 0
    again = TINY_CONFIG.replace("ks = [2, 4, 8]", "ks = [2]").replace("seeds = 2", "seeds = 1")
    again += f'ranking = "{tmp_path / "g6" / "ranking.csv"}"\n'
    (tmp_path / "b.toml").write_text(again)
    for _ in range(2):
        argv = ("run", "--config", tmp_path / "b.toml", "--out", tmp_path / "g6", "--quiet")
        assert cli(*argv, "--force") == 0
        assert (tmp_path / "g6" / "ranking.csv").is_file()
