"""CPU threads: share the cores between concurrent ``interp-heads`` processes.

torch starts one intra-op thread per core in every process; two jobs on the same cores then run
twice as many spinning threads as there are cores and each slows down far more than twofold.
:func:`configure` either applies an explicit ``--threads N`` or, by default, registers this
process in a small folder of pid files (``$TMPDIR/interp_heads-procs``) and gives it
``max(1, cores // live interp-heads processes)`` threads. :func:`rebalance` (called between sweep
conditions) re-applies the fair share when other processes have started or finished.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import tempfile
from pathlib import Path

_state: dict = {"explicit": None, "registered": None}


def _registry() -> Path:
    return Path(tempfile.gettempdir()) / "interp_heads-procs"


def cores() -> int:
    """CPU cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def live_processes() -> int:
    """Registered interp-heads processes still running (at least 1: this one)."""
    n = 0
    with contextlib.suppress(OSError):
        for p in _registry().iterdir():
            if p.name.isdigit() and _alive(int(p.name)):
                n += 1
            elif p.name.isdigit():
                with contextlib.suppress(OSError):
                    p.unlink()
    return max(1, n)


def fair_share() -> int:
    """``max(1, cores // live interp-heads processes)``."""
    return max(1, cores() // live_processes())


def _register() -> None:
    if _state["registered"]:
        return
    with contextlib.suppress(OSError):
        reg = _registry()
        reg.mkdir(exist_ok=True)
        mine = reg / str(os.getpid())
        mine.write_text("")
        _state["registered"] = mine
        atexit.register(unregister)


def unregister() -> None:
    """Remove this process from the registry (at exit)."""
    mine = _state["registered"]
    _state["registered"] = None
    if mine is not None:
        with contextlib.suppress(OSError):
            mine.unlink()


def configure(threads: int | None = None) -> int:
    """Set torch's intra-op threads: ``threads`` when given, else the fair share; returns it."""
    import torch

    _state["explicit"] = threads
    if threads is None:
        _register()
        threads = fair_share()
    torch.set_num_threads(threads)
    return threads


def rebalance() -> None:
    """Re-apply the fair share (no-op with an explicit thread count or when not configured)."""
    if _state["explicit"] is not None or not _state["registered"]:
        return
    import torch

    share = fair_share()
    if share != torch.get_num_threads():
        torch.set_num_threads(share)
