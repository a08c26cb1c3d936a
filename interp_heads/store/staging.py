"""A folder a third-party library writes (``save_pretrained``, ``torch.save``, safetensors),
staged and moved into place the way :func:`store.atomic.write_atomic` moves a file.

A library that writes a whole folder opens its files by path, so the store's one-file writer
cannot stand in for it. :func:`staged_folder` gives it a fresh folder instead: made new by
``mkdtemp`` beside the destination (mode 0700, under a name no one else holds, so no link can be
planted in it beforehand), checked when the block ends (no symbolic link at any depth, nothing
that is not a plain file or folder: what the library left must be its own bytes), and renamed
onto the destination. An existing folder at the destination is moved aside and removed after the
rename, a link standing there is removed (the link, never its target), a file there is refused;
on any failure the staged folder is removed and the destination is as it was.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from interp_heads.store.files import UnsafeFile


@contextlib.contextmanager
def staged_folder(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a new empty folder beside ``path``; moved onto ``path`` when the block succeeds.

    Raises:
        UnsafeFile: the staged folder holds a link or a special file after the block, or
            ``path`` is a file (not a folder).
        OSError: the rename failed (another process put a non-empty folder at ``path`` meanwhile:
            ``ENOTEMPTY``/``EEXIST``); the staged folder is removed.
    """
    path = Path(path)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.staged-"))
    try:
        yield tmp
        _check_plain(tmp)
        _move_onto(tmp, path)
    finally:
        _remove(tmp)


def _check_plain(folder: Path) -> None:
    """Refuse ``folder`` when anything in it (at any depth) is a link or not a file or folder."""
    for where, dirs, files in os.walk(folder):  # os.walk lists a linked folder, never enters it
        for name in dirs + files:
            mode = os.lstat(os.path.join(where, name)).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                kind = "a symbolic link" if stat.S_ISLNK(mode) else "not a plain file"
                raise UnsafeFile(f"{os.path.join(where, name)!r} is {kind}; not moved into place")


def _move_onto(tmp: Path, path: Path) -> None:
    """Rename ``tmp`` onto ``path``: a link there is removed, a real folder moved aside first and
    removed after, a file refused."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        os.rename(tmp, path)
        return
    if stat.S_ISLNK(mode):
        os.unlink(path)  # the link goes, its target stays
        os.rename(tmp, path)
        return
    if not stat.S_ISDIR(mode):
        raise UnsafeFile(f"{str(path)!r} exists and is not a folder; not replaced")
    old = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.old-"))
    os.rename(path, old / "entry")  # aside, inside a folder of ours: the rename below cannot clash
    try:
        os.rename(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.rename(old / "entry", path)  # put back what was there
        raise
    finally:
        _remove(old)


def _remove(folder: Path) -> None:
    """Remove ``folder`` (a staged or moved-aside folder of ours), never following a link."""
    with contextlib.suppress(FileNotFoundError):
        if os.path.islink(folder):
            os.unlink(folder)
            return
        shutil.rmtree(folder)  # rmtree unlinks links inside, never descends them
