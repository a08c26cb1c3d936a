"""CPU threads: share the cores between concurrent ``interp-heads`` processes.

torch starts one intra-op thread per core in every process; two jobs on the same cores then run
twice as many spinning threads as there are cores and each slows down far more than twofold.
:func:`configure` either applies an explicit ``--threads N`` or, by default, registers this
process in a small folder of pid files (``$TMPDIR/interp_heads-procs-<uid>``) and gives it
``max(1, cores // live interp-heads processes)`` threads, fewer when the load average says
other work already occupies the cores. :func:`watch` hooks a model so that, at most
every 2 s of forward passes, :func:`rebalance` re-applies the fair share as other processes start
and finish.

The temp dir is shared by every user, so the registry is used only when it is a real folder (not
a symbolic link) owned by this user and closed to others (mode 0700); otherwise this process
counts alone. Only plain files with a pid for a name are ever deleted from it.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import stat
import tempfile
import time
from pathlib import Path

from interp_heads.model_info import model_info, update_info
from interp_heads.models.alike import mark_alike
from interp_heads.store.atomic import write_atomic

_state: dict = {"explicit": None, "registered": None}


def _registry() -> Path:
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return Path(tempfile.gettempdir()) / f"interp_heads-procs-{uid}"


def _safe_registry(create: bool = False) -> Path | None:
    """The registry folder when it is this user's own real folder (created when asked), else None."""
    reg = _registry()
    if create:
        with contextlib.suppress(FileExistsError):
            reg.mkdir(mode=0o700)
    try:
        st = os.lstat(reg)
    except OSError:
        return None
    mine = not hasattr(os, "getuid") or st.st_uid == os.getuid()
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode) or not mine:
        return None
    if st.st_mode & 0o077:
        return None
    return reg


def cores() -> int:
    """CPU cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError, ValueError):
        return False
    except (PermissionError, OSError):
        return True
    return True


def check_count(threads: int) -> int:
    """``threads`` when it is at most 4 x this machine's cores (torch crashes on huge counts)."""
    limit = 4 * (os.cpu_count() or 1)
    if threads > limit:
        from interp_heads.errors import PipelineError

        raise PipelineError(
            f"threads={threads} is more than 4 x the {os.cpu_count() or 1} CPU cores ({limit})"
        )
    return threads


def live_processes() -> int:
    """Registered interp-heads processes still running (at least 1: this one)."""
    n = 0
    reg = _safe_registry()
    if reg is None:
        return 1
    with contextlib.suppress(OSError):
        for p in reg.iterdir():
            if not p.name.isdigit():
                continue
            if _alive(int(p.name)):
                n += 1
            elif stat.S_ISREG(os.lstat(p).st_mode):
                with contextlib.suppress(OSError):
                    p.unlink()
    return max(1, n)


def fair_share() -> int:
    """``max(1, cores // live interp-heads processes)``, capped by the cores other work leaves idle.

    Other work is the 1-minute load average minus this process's own threads; a 2-thread torch
    pool on 2 cores that are also running something else spins and runs 10-20x slower than one
    thread (measured, docs/cli.md).
    """
    share = max(1, cores() // live_processes())
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return share
    others = max(0.0, load - (_state.get("applied") or 0))
    return max(1, min(share, int(cores() - others + 0.5)))


def _apply(n: int) -> None:
    import torch

    torch.set_num_threads(n)
    _state["applied"] = n


def _register() -> None:
    if _state["registered"]:
        return
    with contextlib.suppress(OSError):
        reg = _safe_registry(create=True)
        if reg is None:
            return
        mine = reg / str(os.getpid())
        write_atomic(mine, b"")  # a new file of ours, never through a link planted there
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

    if threads is not None:
        check_count(threads)
    _state["explicit"] = threads
    if threads is None:
        _register()
        threads = fair_share()
    _apply(threads)
    return threads


def rebalance(min_interval: float = 0.0) -> None:
    """Re-apply the fair share (no-op with an explicit thread count or when not configured).

    Args:
        min_interval: do nothing if the last check is more recent than this many seconds.
    """
    if _state["explicit"] is not None or not _state["registered"]:
        return
    now = time.monotonic()
    if now - _state.get("checked", -1e9) < min_interval:
        return
    _state["checked"] = now
    import torch

    share = fair_share()
    if share != torch.get_num_threads():
        _apply(share)


def watch(model, every: float = 2.0) -> None:
    """Rebalance at most every ``every`` seconds, from a forward pre-hook on the model's embedding
    (so generation, attribution and baselines all adapt while other processes start and end)."""
    embed = getattr(model, "embed", None)
    if embed is None or model_info(model).threads_watch:
        return

    def hook(*_) -> None:  # must return None: a value would replace the input
        rebalance(every)

    embed.register_forward_pre_hook(hook)
    mark_alike(model, 1)  # it only times passes: the same for every row and pass
    update_info(model, threads_watch=True)
