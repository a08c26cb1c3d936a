"""Processes racing for one run folder's stale lock: exactly one of them may win each race.

A stale lock (its writer is dead) is planted, then two or three processes, released together by
a barrier, call ``store.acquire`` at once. Each holds what it won until all have tried, so a
second winner cannot be one that came after a release: more than one winner is a double holder.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import socket
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from interp_heads.store import LOCK_NAME, RunFolderBusy, acquire, release

TRIALS = {2: 200, 3: 150}


def _racer(folder: str, trials: int, barrier, wins) -> None:
    warnings.simplefilter("ignore")
    for _ in range(trials):
        barrier.wait()  # the stale lock is planted
        try:
            lock, won = acquire(folder), 1
        except RunFolderBusy:
            lock, won = None, 0
        with wins.get_lock():
            wins.value += won
        barrier.wait()  # every racer has tried
        if lock is not None:
            release(lock)
        barrier.wait()  # every winner has released


def _dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    return int(done.stdout)


@pytest.mark.parametrize("n", sorted(TRIALS))
def test_one_winner_takes_over_a_stale_lock(n, tmp_path):
    ctx = mp.get_context("fork")
    barrier, wins = ctx.Barrier(n + 1), ctx.Value("i", 0)
    stale = json.dumps({"pid": _dead_pid(), "host": socket.gethostname(), "started": "1"})
    racers = [ctx.Process(target=_racer, args=(str(tmp_path), TRIALS[n], barrier, wins))
              for _ in range(n)]  # fmt: skip
    for p in racers:
        p.start()
    doubled = 0
    try:
        for _ in range(TRIALS[n]):
            (tmp_path / LOCK_NAME).write_text(stale)
            with wins.get_lock():
                wins.value = 0
            barrier.wait(timeout=60)
            barrier.wait(timeout=60)
            doubled += wins.value > 1
            assert wins.value >= 1, "a stale lock was not taken over by anyone"
            barrier.wait(timeout=60)
    finally:
        for p in racers:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
    assert doubled == 0, f"{doubled} of {TRIALS[n]} races had two or more winners"
    assert not (tmp_path / LOCK_NAME).exists()
    assert sorted(os.listdir(tmp_path)) == [], "temporary files left behind"


def test_a_free_lock_has_one_winner(tmp_path):
    lock = acquire(tmp_path)
    try:
        assert json.loads(Path(lock).read_text())["pid"] == os.getpid()
    finally:
        release(lock)
