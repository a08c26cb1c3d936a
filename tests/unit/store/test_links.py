"""No write of the tool follows a link out of a run folder, and no read of one hangs or reads
without bound.

* A link planted under the name of a temporary file (``.NAME.interp-heads-tmpPID``, for a range
  of pids, this process's own included) is removed, never written through: ``report`` and
  ``score`` leave the link's target as it was and write plain files.
* A FIFO, a link to ``/dev/zero`` or a link to a file outside, in place of a table, the manifest,
  a resume entry, the lock or the generations: one line and exit 2 (``report``, ``score``,
  ``load_run``), or the entry ignored and recomputed; never a hang (subprocesses with a timeout).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from interp_heads import store
from interp_heads.errors import InputError
from interp_heads.store.atomic import TEMP_MARK
from tests.helpers import ROOT, TINY_CONFIG, cli, finished_run

CONFIG = TINY_CONFIG
ENV = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    return finished_run(tmp_path_factory.mktemp("finished"))


@pytest.fixture
def run(finished, tmp_path) -> Path:
    shutil.copytree(finished, tmp_path / "run")
    return tmp_path / "run"


def _pids() -> list[int]:
    me = os.getpid()
    return sorted({1, me, *range(max(2, me - 20), me + 20), 4_000_000})


def _plant(folder: Path, name: str, outside: Path) -> list[Path]:
    links = []
    for pid in _pids():
        link = folder / f".{name}{TEMP_MARK}{pid}"
        link.symlink_to(outside)
        links.append(link)
    return links


# --------------------------------------------------------------------------- writes
def test_write_atomic_never_writes_through_a_planted_temporary_link(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    target = tmp_path / "folder" / "table.csv"
    target.parent.mkdir()
    store.temp_path(target).symlink_to(outside)
    store.write_atomic(target, "new")
    assert outside.read_text() == "keep"
    assert target.read_text() == "new" and not target.is_symlink()
    assert not store.temp_path(target).is_symlink()


def test_atomic_block_never_writes_through_a_planted_temporary_link(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    target = tmp_path / "table.csv"
    store.temp_path(target).symlink_to(outside)
    with store.atomic(target) as tmp:
        Path(tmp).write_text("new")
    assert outside.read_text() == "keep" and target.read_text() == "new"
    assert not target.is_symlink()


def test_the_final_rename_replaces_a_link_at_the_destination_not_its_target(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    target = tmp_path / "index.html"
    target.symlink_to(outside)
    store.write_atomic(target, "page")
    assert outside.read_text() == "keep" and not target.is_symlink()


def test_the_lock_never_writes_through_a_planted_temporary_link(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    folder = tmp_path / "run"
    folder.mkdir()
    store.temp_path(folder.resolve() / store.LOCK_NAME).symlink_to(outside)
    with store.held_locks():
        store.acquire(folder)
    assert outside.read_text() == "keep"


def test_report_removes_planted_temporary_links_and_writes_a_plain_page(run, tmp_path):
    outside = tmp_path / "outside.html"
    outside.write_text("keep")
    links = _plant(run, "index.html", outside) + _plant(run / "figures", "plotly.min.js", outside)
    assert cli("report", run) == 0
    assert outside.read_text() == "keep"
    assert (run / "index.html").is_file() and not (run / "index.html").is_symlink()
    assert not any(os.path.lexists(link) for link in links)


def test_score_removes_planted_temporary_links_and_writes_a_plain_table(run, tmp_path):
    outside = tmp_path / "outside.csv"
    outside.write_text("keep")
    (run / "scores").mkdir()
    links = _plant(run / "scores", "chrf.csv", outside)
    assert cli("score", run, "--metrics", "chrf") == 0
    assert outside.read_text() == "keep"
    table = run / "scores" / "chrf.csv"
    assert table.is_file() and not table.is_symlink()
    assert not any(os.path.lexists(link) for link in links)


def test_clean_up_unlinks_a_temporary_link_not_its_target(tmp_path):
    from interp_heads.store.folder import RunFolder

    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    folder = tmp_path / "run"
    (folder / "conditions").mkdir(parents=True)
    links = _plant(folder / "conditions", "a.json", outside)
    RunFolder(folder).clean_temps()
    assert outside.read_text() == "keep" and not any(os.path.lexists(x) for x in links)


# --------------------------------------------------------------------------- reads
def _cli(*argv, timeout: int = 60) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "interp_heads.cli", *map(str, argv)]
    return subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=timeout)


def _fifo(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path)


def _to_dev_zero(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.symlink_to("/dev/zero")


def _to_outside(path: Path) -> None:
    outside = path.parent.parent / f"outside-{path.name}"
    shutil.copy(path, outside)
    path.unlink()
    path.symlink_to(outside)


PLANTS = {"fifo": _fifo, "dev_zero": _to_dev_zero, "outside_link": _to_outside}
READ_BACK = ["summary.parquet", "significance.csv", "manifest.json", "generations.jsonl",
             "baseline.csv", "attribution.parquet", "sweep.parquet"]  # fmt: skip


@pytest.mark.parametrize("name", ["summary.parquet", "significance.csv", "manifest.json"])
@pytest.mark.parametrize("plant", ["fifo", "dev_zero"])
def test_report_refuses_a_fifo_or_device_in_place_of_a_file_without_hanging(run, name, plant):
    PLANTS[plant](run / name)
    done = _cli("report", run)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and name in done.stderr, done.stderr


@pytest.mark.parametrize("name", READ_BACK)
@pytest.mark.parametrize("plant", list(PLANTS))
def test_load_run_refuses_a_link_or_non_regular_file_with_one_line(run, name, plant):
    from interp_heads import load_run

    if name == "manifest.json" and plant != "outside_link":
        pytest.skip("covered through report above")
    PLANTS[plant](run / name)
    with pytest.raises(InputError, match=name.replace(".", r"\.")):
        load_run(run)


@pytest.mark.parametrize("plant", list(PLANTS))
def test_score_refuses_a_fifo_or_link_in_place_of_the_generations(run, plant):
    PLANTS[plant](run / "generations.jsonl")
    done = _cli("score", run, "--metrics", "chrf")
    assert done.returncode == 2 and "generations.jsonl" in done.stderr, done.stderr


@pytest.mark.parametrize("plant", list(PLANTS))
def test_a_resume_entry_that_is_a_fifo_or_link_is_ignored_without_hanging(run, plant):
    entry = next((run / "conditions").glob("*__k2__*.json"))
    PLANTS[plant](entry)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert store.read_entry(entry) is None
    assert any(entry.name in str(w.message) for w in caught)


@pytest.mark.parametrize("plant", ["fifo", "dev_zero"])
def test_a_lock_file_that_is_a_fifo_or_device_is_taken_over_without_hanging(run, plant):
    PLANTS[plant](run / store.LOCK_NAME)
    done = _cli("report", run)
    assert done.returncode == 0, done.stderr
    assert not os.path.lexists(run / store.LOCK_NAME)
