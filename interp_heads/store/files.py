"""The run folder's file primitives that never follow a link: a new temporary file, a bounded read.

* :func:`create_new` opens a temporary file with ``O_CREAT | O_EXCL | O_NOFOLLOW``: a link (or
  anything else) planted under its name is removed (the link itself, never its target) and the
  file is created afresh, so a write can never land outside the folder.
* :func:`read_plain` reads a file of the folder only when it is a regular file reached without a
  link, and at most ``limit`` bytes of it: a link, a FIFO (opened without blocking) or a device
  is refused with one line (:class:`UnsafeFile`), before a byte is read.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from interp_heads.errors import PipelineError

MAX_READ = (
    512 * 2**20
)  # the largest run-folder file read back (tables of big sweeps are tens of MB)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class UnsafeFile(PipelineError):
    """A run-folder file that is a link, not a regular file, or too large to read back."""


def create_new(path: str | os.PathLike) -> int:
    """A file descriptor of ``path`` created new for writing (never through a link); whatever
    was at ``path`` (a stale temporary file, a planted link) is unlinked first."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
    try:
        return os.open(path, flags, 0o644)
    except FileExistsError:
        os.unlink(path)  # a link goes, not its target; a folder raises (IsADirectoryError)
        return os.open(path, flags, 0o644)


def is_plain(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a regular file itself (not a link to one)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def read_plain(path: str | os.PathLike, limit: int = MAX_READ) -> bytes:
    """The bytes of the regular file ``path``, refused when it is a link, not a regular file
    (FIFO, device, folder) or over ``limit`` bytes.

    Raises:
        FileNotFoundError: nothing at ``path``.
        UnsafeFile: a link, not a regular file, or too large (one line naming the file).
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | os.O_NONBLOCK | _CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if os.path.islink(path):
            raise UnsafeFile(
                f"{path}: a symbolic link; refused (only plain files are read)"
            ) from None
        raise UnsafeFile(f"{path}: unreadable ({exc.strerror or exc})") from None
    with contextlib.closing(os.fdopen(fd, "rb", buffering=0)) as fh:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeFile(f"{path}: not a regular file (a FIFO, device or folder); refused")
        if info.st_size > limit:
            raise UnsafeFile(f"{path}: {info.st_size} bytes, over the {limit} read back; refused")
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise UnsafeFile(f"{path}: over the {limit} bytes read back; refused")
    return data


def first_link(root: str | os.PathLike, path: str | os.PathLike) -> Path | None:
    """The first folder or file from just below ``root`` down to ``path`` that is a symbolic link
    (None: none is). Read from the names as given, each with ``lstat``: a link above ``root``
    (the user's own path to the folder) is the user's choice, one below it would take a write or
    delete out of the folder."""
    root, path = Path(os.path.abspath(root)), Path(os.path.abspath(path))
    if path != root and root not in path.parents:
        return None
    step = root
    for part in path.relative_to(root).parts:
        step = step / part
        try:
            if stat.S_ISLNK(os.lstat(step).st_mode):
                return step
        except FileNotFoundError:
            return None  # nothing further down exists yet
        except OSError:
            return None
    return None


def linked_folders(root: str | os.PathLike, names) -> list[Path]:
    """Every symbolic link to a folder, or any link standing where a folder is, inside the
    folders ``root/<name>`` (at any depth, never descending through a link), and those folders
    themselves when they are links."""
    root = Path(root)
    found = []
    for name in names:
        top = root / name
        if top.is_symlink():
            found.append(top)
            continue
        if not top.is_dir():
            continue
        for where, dirs, _ in os.walk(top):  # os.walk does not descend into linked folders
            found += [Path(where) / d for d in dirs if os.path.islink(os.path.join(where, d))]
    return found


def make_folder(root: str | os.PathLike, path: str | os.PathLike) -> Path:
    """Make ``path`` (and the folders between ``root`` and it) when absent, never through a link:
    :class:`UnsafeFile` when a part below ``root`` is a link or not a folder."""
    path = Path(path)
    link = first_link(root, path)
    if link is not None:
        raise UnsafeFile(f"{str(link)!r} is a symbolic link; the tool writes only into real "
                         "folders inside the folder it was given")  # fmt: skip
    root = Path(os.path.abspath(root))
    step = root
    for part in Path(os.path.abspath(path)).relative_to(root).parts:
        step = step / part
        try:
            os.mkdir(step)
        except FileExistsError:
            info = os.lstat(step)
            if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
                what = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a folder"
                raise UnsafeFile(f"{str(step)!r} is {what}; the tool writes only into real "
                                 "folders inside the folder it was given") from None  # fmt: skip
    return path
