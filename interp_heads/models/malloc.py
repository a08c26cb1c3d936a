"""glibc's malloc on the CPU: keep freed large blocks for reuse instead of handing them back.

glibc serves a block above its mmap threshold (which its dynamic rule raises to at most 32 MiB)
with a fresh ``mmap`` and unmaps it when freed; the next block of that size then faults its pages
in again and the kernel zeroes every one of them. Torch on the CPU frees and allocates the same
large tensors at every step: the Cognitive Mirrors probe's 8.8M-parameter gradient (35 MB) at each
of its 9,600 batch-1 steps, a prompt pass's attention scores at batch 48 (hundreds of MB). With the
blocks kept, a probe step went from 29 to 13 ms on 2 cores (``bench.speed.bench_probe_train``);
results are bitwise the same, only where memory comes from changes.

:func:`keep_freed_memory` sets this for the whole process with ``mallopt`` (no mmap below 1 GiB,
no trimming of the heap's top below 1 GiB): the process's memory then stays near its peak until it
exits, which a command-line run that exits when done does not mind. The CLI calls it for the
commands that run a model (``INTERP_HEADS_MALLOC=default`` leaves glibc's defaults); a notebook
may call it too. Elsewhere than glibc (macOS, musl) it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform

M_TRIM_THRESHOLD = -1
M_TOP_PAD = -2
M_MMAP_THRESHOLD = -3
KEEP = 1 << 30  # bytes: blocks below this come from the heap, and its top is kept up to this

_state = {"applied": False}


def keep_freed_memory() -> bool:
    """Make glibc keep freed blocks below 1 GiB for reuse (process-wide); True when applied.

    Nothing happens off glibc, or when ``INTERP_HEADS_MALLOC=default`` is set."""
    if _state["applied"]:
        return True
    if os.environ.get("INTERP_HEADS_MALLOC") == "default" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        done = all(
            libc.mallopt(option, value) == 1
            for option, value in (
                (M_MMAP_THRESHOLD, KEEP),
                (M_TRIM_THRESHOLD, KEEP),
                (M_TOP_PAD, 64 << 20),
            )
        )
    except (OSError, AttributeError):
        return False
    _state["applied"] = done
    return done
