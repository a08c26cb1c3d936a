"""The single-writer lock of a run folder: one process writes it at a time.

:func:`acquire` creates ``.interp_heads.lock`` holding the writer's pid, host and start time. A
second writer gets :class:`RunFolderBusy` ("run folder in use by pid N"); a lock left by a dead
process (SIGKILL, power loss), or whose pid now belongs to another process, is taken over with a
warning. Locks taken inside :func:`held_locks` (or a function decorated with
:func:`releases_locks`) are released when it exits, whatever the outcome.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import socket
import warnings
from collections.abc import Iterator
from pathlib import Path

from interp_heads.store.atomic import StoreWarning

LOCK_NAME = ".interp_heads.lock"


class RunFolderBusy(ValueError):
    """Another live process holds the run folder's lock."""


# --------------------------------------------------------------------------- the lock
_held: dict[Path, int] = {}  # lock file -> nesting depth, in this process


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OverflowError, ValueError):
        return False
    return True


def _started(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot, from ``/proc``), None when unknown.

    A lock records its writer's start time, so a pid reused by another process is not mistaken
    for the writer."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else None


def _holder_alive(theirs: dict) -> bool:
    """Whether the writer named by a lock is still running (not merely its pid, reused)."""
    if not _pid_alive(theirs["pid"]):
        return False
    started = theirs.get("started")
    return started is None or _started(theirs["pid"]) in (None, started)


def _read_lock(lock: Path) -> dict | None:
    try:
        d = json.loads(lock.read_text())
        return d if isinstance(d, dict) and isinstance(d.get("pid"), int) else None
    except (OSError, ValueError):
        return None


def acquire(out_dir: str | os.PathLike) -> Path:
    """Take the lock of ``out_dir`` (which must exist) for this process; returns the lock file.

    Raises:
        RunFolderBusy: a live process (or one on another host) holds it.
    """
    lock = Path(out_dir).resolve() / LOCK_NAME
    if lock in _held:
        _held[lock] += 1
        return lock
    me = {"pid": os.getpid(), "host": socket.gethostname(), "started": _started(os.getpid())}
    tmp = lock.with_name(f"{LOCK_NAME}.{os.getpid()}")
    tmp.write_text(json.dumps(me))
    try:
        for _ in range(3):
            try:
                os.link(tmp, lock)  # atomic: fails when a lock exists, never leaves it half-written
                break
            except FileExistsError:
                pass
            theirs = _read_lock(lock)
            if (
                theirs is not None
                and theirs["pid"] == me["pid"]
                and theirs.get("host") == me["host"]
            ):
                break  # ours, left behind by an earlier call in this process
            if theirs is not None and theirs.get("host") != me["host"]:
                raise RunFolderBusy(
                    f"run folder {str(out_dir)!r} in use by pid {theirs['pid']} on host {theirs.get('host')!r} "
                    f"(delete {lock} if that process is gone)"
                )
            if theirs is not None and _holder_alive(theirs):
                raise RunFolderBusy(
                    f"run folder {str(out_dir)!r} in use by pid {theirs['pid']} (if no "
                    f"interp-heads process is running there, delete {lock})"
                )
            what = f"of pid {theirs['pid']} (no longer running)" if theirs else "(unreadable)"
            warnings.warn(f"{lock}: stale lock {what} taken over", StoreWarning, stacklevel=2)
            os.replace(tmp, lock)
            tmp.write_text(json.dumps(me))
            if (_read_lock(lock) or {}).get("pid") == me["pid"]:
                break
        else:
            raise RunFolderBusy(f"run folder {str(out_dir)!r} in use (could not take {lock})")
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    _held[lock] = 1
    return lock


def release(lock: Path) -> None:
    """Release a lock taken by :func:`acquire` (the file goes when the last holder releases it)."""
    if lock not in _held:
        return
    _held[lock] -= 1
    if _held[lock] > 0:
        return
    del _held[lock]
    if (_read_lock(lock) or {}).get("pid") == os.getpid():
        with contextlib.suppress(OSError):
            lock.unlink()


def holds(out_dir: str | os.PathLike) -> bool:
    """Whether this process holds the lock of ``out_dir``."""
    return Path(out_dir).resolve() / LOCK_NAME in _held


def drop(out_dir: str | os.PathLike) -> None:
    """Release this process's lock of ``out_dir`` however often it was taken (the folder is going)."""
    lock = Path(out_dir).resolve() / LOCK_NAME
    if lock in _held:
        _held[lock] = 1
        release(lock)


@contextlib.contextmanager
def held_locks() -> Iterator[None]:
    """Release, on exit, every lock taken inside the block."""
    before = dict(_held)
    try:
        yield
    finally:
        for lock in list(_held):
            for _ in range(_held.get(lock, 0) - before.get(lock, 0)):
                release(lock)


def releases_locks(func):
    """Decorator: run ``func`` inside :func:`held_locks`."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with held_locks():
            return func(*args, **kwargs)

    return wrapper
