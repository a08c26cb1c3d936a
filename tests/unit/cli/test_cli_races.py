"""Whole commands racing for one run folder: ``interp-heads`` processes started together on one
``--out`` (run vs run vs run, run vs report, run --force vs report).

Whichever takes the folder's lock first works; each other either finds the lock held and exits 2
with one line ("in use"), or starts after the holder released it and resumes or reports as
designed (exit 0); a run refused while a report holds the lock has changed nothing. The
finished folder holds exactly one run's tables (the golden tiny run), no
lock and no temporary file. Each trial starts 2 or 3 processes of the tiny model.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from interp_heads.store import LOCK_NAME, temp_pid
from interp_heads.testing.tiny import assert_matches_golden
from tests.helpers import DATA, ROOT

CONFIG = str(DATA / "tiny.toml")
RUN = ["run", "--config", CONFIG, "--out", "OUT", "--quiet"]
ROUNDS = 2  # each trial twice: which process takes the lock first varies
TRIALS = {
    "run vs run vs run": (None, [RUN, RUN, RUN]),
    "run vs report": ("finished", [RUN, ["report", "OUT"]]),
    "run --force vs report": ("finished", [[*RUN, "--force"], ["report", "OUT"]]),
}


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("race") / "run"
    done = _start([a.replace("OUT", str(out)) for a in RUN]).communicate(timeout=600)
    assert (out / "index.html").is_file(), done[1]
    return out


def _start(argv: list[str]) -> subprocess.Popen:
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "interp_heads.cli", *argv]
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("round_", range(ROUNDS))
@pytest.mark.parametrize("trial", list(TRIALS))
def test_commands_racing_on_one_folder_leave_one_run(trial, round_, finished, tmp_path):
    start_from, commands = TRIALS[trial]
    out = tmp_path / "run"
    if start_from:
        shutil.copytree(finished, out)
    procs = [_start([str(out) if a == "OUT" else a for a in argv]) for argv in commands]
    ends = [(p.wait(timeout=600), *p.communicate()) for p in procs]
    for code, _, err in ends:
        assert code in (0, 2), err[-800:]
        if code == 2:  # refused: the folder's lock was held
            last = err.strip().splitlines()[-1]
            assert last.startswith("interp-heads: error: run folder") and "in use" in last, err
            assert "Traceback" not in err
    assert any(code == 0 for code, _, _ in ends), "no process held the folder"
    assert_matches_golden(out, DATA / "golden" / "tiny")
    assert (out / "index.html").is_file() and not (out / LOCK_NAME).exists()
    assert not [p for p in out.rglob("*") if temp_pid(p.name) is not None]
    print(trial, "exit codes:", [code for code, _, _ in ends])  # -s shows who held the lock
