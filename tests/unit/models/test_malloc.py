"""models.malloc: freed large blocks are reused without new page faults once kept (glibc only).

Each case runs in a fresh interpreter: the setting is process-wide and cannot be undone."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's mallopt")

# A 48 MB tensor (above glibc's 32 MiB dynamic mmap limit) allocated, filled and freed four times:
# the minor page faults of the last three rounds, before and after keep_freed_memory().
PROBE = """
import json, resource, torch
from interp_heads.models import malloc

def faults():
    out = []
    for _ in range(4):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        t = torch.empty(12_000_000).fill_(1.0)
        del t
        out.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    return sum(out[1:])

default = faults()
applied = malloc.keep_freed_memory()
print(json.dumps({"default": default, "applied": applied, "kept": faults()}))
"""


def _run(env_extra: dict) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "INTERP_HEADS_MALLOC"} | env_extra
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_kept_blocks_come_back_without_page_faults():
    r = _run({})
    assert r["applied"] is True
    # 48 MB is ~11,700 pages of 4 KiB: each round faults them all in by default
    assert r["default"] > 3 * 10_000
    assert r["kept"] < r["default"] / 10


def test_the_environment_leaves_glibc_default():
    r = _run({"INTERP_HEADS_MALLOC": "default"})
    assert r["applied"] is False
    assert r["kept"] > 3 * 10_000
