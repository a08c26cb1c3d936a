"""The single-writer lock of a run folder: one process writes it at a time.

:func:`acquire` creates ``.interp_heads.lock`` holding the writer's pid, host and start time. A
second writer gets :class:`RunFolderBusy` ("run folder in use by pid N"); a lock left by a dead
process (SIGKILL, power loss), or whose pid now belongs to another process, is taken over with a
warning. Locks taken inside :func:`held_locks` (or a function decorated with
:func:`releases_locks`) are released when it exits, whatever the outcome.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import socket
import warnings
from collections.abc import Iterator
from pathlib import Path

from interp_heads.store.atomic import StoreWarning, temp_path
from interp_heads.store.files import create_new, read_plain

LOCK_NAME = ".interp_heads.lock"


class RunFolderBusy(ValueError):
    """Another live process holds the run folder's lock."""


# --------------------------------------------------------------------------- the lock
_held: dict[Path, int] = {}  # lock file -> nesting depth, in this process


def pid_alive(pid: int) -> bool:
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
    if not pid_alive(theirs["pid"]):
        return False
    started = theirs.get("started")
    return started is None or _started(theirs["pid"]) in (None, started)


def _read_lock(lock: Path) -> dict | None:
    try:
        d = json.loads(read_plain(lock, 4096))  # a link, FIFO or device is no lock
        return d if isinstance(d, dict) and isinstance(d.get("pid"), int) else None
    except (OSError, ValueError):
        return None


def acquire(out_dir: str | os.PathLike) -> Path:
    """Take the lock of ``out_dir`` (which must exist) for this process; returns the lock file.

    A free lock is taken with ``os.link`` (atomic: one process wins). A stale one is taken over
    under an exclusive ``flock`` of the folder (:func:`_take_over`), so of several processes
    that find the same stale lock, exactly one takes it; the others then find it live.

    Raises:
        RunFolderBusy: a live process (or one on another host) holds it.
    """
    lock = Path(out_dir).resolve() / LOCK_NAME
    if lock in _held:
        _held[lock] += 1
        return lock
    me = {"pid": os.getpid(), "host": socket.gethostname(), "started": _started(os.getpid())}
    tmp = temp_path(lock)
    with os.fdopen(create_new(tmp), "w") as fh:  # never through a link planted under its name
        fh.write(json.dumps(me))
    try:
        for _ in range(5):
            try:
                os.link(tmp, lock)  # atomic: fails when a lock exists, never leaves it half-written
                break
            except FileExistsError:
                pass
            theirs = _read_lock(lock)
            if theirs is None and not os.path.lexists(lock):
                continue  # released meanwhile: try again
            if _is_mine(theirs, me):
                break  # ours, left behind by an earlier call in this process
            _refuse_live(theirs, out_dir, lock)
            if _take_over(lock, tmp, theirs):
                what = f"of pid {theirs['pid']} (no longer running)" if theirs else "(unreadable)"
                warnings.warn(f"{lock}: stale lock {what} taken over", StoreWarning, stacklevel=2)
                break
        else:
            raise RunFolderBusy(f"run folder {str(out_dir)!r} in use (could not take {lock})")
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    _held[lock] = 1
    return lock


def _is_mine(theirs: dict | None, me: dict) -> bool:
    return theirs is not None and theirs["pid"] == me["pid"] and theirs.get("host") == me["host"]


def _refuse_live(theirs: dict | None, out_dir, lock: Path) -> None:
    """``RunFolderBusy`` when the lock's writer is on another host or still running."""
    if theirs is not None and theirs.get("host") != socket.gethostname():
        raise RunFolderBusy(
            f"run folder {str(out_dir)!r} in use by pid {theirs['pid']} on host {theirs.get('host')!r} "
            f"(delete {lock} if that process is gone)"
        )
    if theirs is not None and _holder_alive(theirs):
        raise RunFolderBusy(
            f"run folder {str(out_dir)!r} in use by pid {theirs['pid']} (if no "
            f"interp-heads process is running there, delete {lock})"
        )


def _take_over(lock: Path, tmp: Path, seen: dict | None) -> bool:
    """Replace the stale lock ``seen`` by ours (``tmp``); False when the lock changed meanwhile.

    Under an exclusive ``flock`` of the folder, so the check that the lock is still the stale
    one and its replacement are one step for every process taking over; a process taking a free
    lock (``os.link``) cannot slip in between either, as ours is linked, never copied over."""
    fd = os.open(lock.parent, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if _read_lock(lock) != seen:
            return False  # taken over or released by another process: look again
        with contextlib.suppress(FileNotFoundError):
            lock.unlink()
        try:
            os.link(tmp, lock)
        except FileExistsError:
            return False
        return True
    finally:
        os.close(fd)  # releases the flock


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
