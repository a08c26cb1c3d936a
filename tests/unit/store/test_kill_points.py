"""SIGKILL at named points of every step, including inside atomic writes; a rerun gives the golden result.

``INTERP_HEADS_KILL_AT`` (``interp_heads.store.faults``) makes the run kill itself at the point, as a
power cut would: after the temporary file is written and before its rename, or between steps.
The rerun must end with exactly the outputs of an uninterrupted run (tests/data/golden/tiny).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from interp_heads.store import temp_pid
from interp_heads.testing.tiny import assert_matches_golden
from tests.helpers import ROOT

DATA = ROOT / "tests" / "data"

POINTS = [
    "step:attribute",  # baseline done, before attribution
    "write:attribution/tiny_echo.json",  # inside the attribution write, before its rename
    "write:conditions/*#3",  # inside the third condition write (sweep)
    "write:*/sweep.parquet",  # tables
    "write:figures/*",  # report
    "write:*/manifest.json#4",  # the manifest after the sweep step (#1: started, before baseline)
]


@pytest.mark.parametrize("point", POINTS)
def test_killed_at_point_then_rerun_equals_golden(point, tmp_path):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "interp_heads.cli", "run", "--config", str(DATA / "tiny.toml")]
    cmd += ["--out", str(out), "--quiet"]
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}
    killed = subprocess.run(
        cmd, cwd=ROOT, env={**env, "INTERP_HEADS_KILL_AT": point}, capture_output=True, timeout=300
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()[-500:]
    assert not (out / "index.html").exists()
    rerun = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, timeout=300, text=True)
    assert rerun.returncode == 0, rerun.stderr[-500:]
    assert_matches_golden(out, DATA / "golden" / "tiny")
    left = [p.name for p in out.rglob("*") if temp_pid(p.name) is not None]
    assert not left, f"temporary files of the killed run left behind: {left}"
