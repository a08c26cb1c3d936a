"""A full disk (``ENOSPC``) during a resumed run or ``report``: the earlier results stay as they
were, no temporary file is left, and the command exits 1 with one line (no traceback).

The disk fills at a named write (``store.faults.point``, inside every atomic write just before
its rename: the temporary file is written) and stays full for every write after it.
"""

from __future__ import annotations

import errno
import fnmatch
import json
import shutil
import warnings
from pathlib import Path

import pytest

from interp_heads.cli import main
from interp_heads.store import faults, temp_pid
from tests.helpers import finished_run, snapshot

REDRAWN = ("manifest.json", "index.html", "figures/")  # rewritten by every resume or report


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    return finished_run(tmp_path_factory.mktemp("full"))


def _fill_disk_at(monkeypatch, pattern: str) -> list[str]:
    """From the first write matching ``pattern`` on, every atomic write fails with ENOSPC."""
    failed: list[str] = []

    def point(name: str) -> None:
        if failed or (name.startswith("write:") and fnmatch.fnmatchcase(name, pattern)):
            if name.startswith("write:"):
                failed.append(name)
                raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(faults, "point", point)
    return failed


def _temps(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if temp_pid(p.name) is not None]


@pytest.mark.parametrize(
    ("command", "full_at"),
    [
        ("run", "write:*/manifest.json"),  # the first write: the manifest saying "started"
        ("run", "write:*/sweep.parquet"),  # the sweep's tables
        ("run", "write:*/index.html"),  # the page, after its figures
        ("report", "write:figures/*"),  # the first figure
    ],
)
def test_disk_full_keeps_earlier_results(command, full_at, finished, tmp_path, monkeypatch, capfd):
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    before = snapshot(run)
    failed = _fill_disk_at(monkeypatch, full_at)
    argv = ["run", "--config", finished.parent / "c.toml", "--out", run, "--quiet"]
    capfd.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main([str(a) for a in (argv if command == "run" else ["report", run])])
    err = capfd.readouterr().err.split("\r")[-1]
    assert failed, "the disk never filled: no write matched"
    assert code == 1, err
    assert err.startswith("interp-heads: error: ") and err.count("\n") == 1, err
    assert "No space left on device" in err and "Traceback" not in err
    assert not _temps(run), "a temporary file was left behind"
    after = snapshot(run)
    first = failed[0].split("/", 1)[1]  # the write that failed keeps its earlier bytes
    for name, digest in before.items():
        if name.as_posix().endswith(first) or not name.as_posix().startswith(REDRAWN):
            assert after.get(name) == digest, f"{name} changed"
    assert set(after) == set(before)
    assert json.loads((run / "manifest.json").read_text())["config_digest"]
    if failed[0] == "write:run/manifest.json":
        assert after == before  # full before anything was written: the folder as it was
