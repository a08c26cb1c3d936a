"""Kill points for the resume tests: ``INTERP_HEADS_KILL_AT=NAME[#N]`` SIGKILLs the process.

``NAME`` may hold ``*`` wildcards (``write:conditions/*#3``: during the third condition write).

The N-th time (default 1st) the code passes :func:`point` ``NAME``, the process kills itself with
SIGKILL, as a power cut or the OOM killer would. Named points sit inside every atomic write, just
before its rename (``write:<folder>/<file>``, e.g. ``write:attribution/math.json``) and between
steps (``step:<name>``). Unset (always, outside tests) it costs one dictionary lookup.
"""

from __future__ import annotations

import fnmatch
import os
import signal

_hits: dict[str, int] = {}


def point(name: str) -> None:
    spec = os.environ.get("INTERP_HEADS_KILL_AT")
    if not spec:
        return
    target, _, nth = spec.partition("#")
    if not fnmatch.fnmatchcase(name, target):
        return
    _hits[target] = _hits.get(target, 0) + 1
    if _hits[target] == int(nth or 1):
        os.kill(os.getpid(), signal.SIGKILL)
