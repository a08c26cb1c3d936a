"""A study's pages in its docs folder: written and read back as the run folder's files are.

* :func:`check_docs` checks the docs folder before a study runs: a folder or absent (it is made),
  never a file, never a symbolic link.
* :func:`write_page` writes a page through the store's atomic writer (``store.atomic``: a new
  temporary file that no planted link can redirect, renamed over the page's own entry, so a link
  standing where the page goes is replaced, its target untouched), into a folder reached
  without a link.
* :func:`as_named` is how a page names a run folder: relative to the working directory when
  inside it, so a committed page reads the same whichever absolute path made it.
* :func:`read_page` reads back a page a study updates in place (a generated block of
  ``results.md``): a plain file of bounded size, so a link is not followed and a FIFO is refused
  at once instead of blocking the study (``store.files.read_plain``).
"""

from __future__ import annotations

import os
from pathlib import Path

from interp_heads.errors import PipelineError
from interp_heads.store.atomic import write_atomic
from interp_heads.store.files import read_plain

MAX_PAGE = 16 * 2**20  # a page the tool wrote is tens of kB; a larger one is not its own


def check_docs(docs: str | os.PathLike) -> Path:
    """``docs`` when it can hold a study's pages: a real folder or absent (``PipelineError``,
    one line, for a file, a link or a folder that cannot be made)."""
    docs = Path(docs)
    if docs.is_symlink():
        raise PipelineError(f"--docs {str(docs)!r} is a symbolic link; give a real folder")
    if docs.exists() and not docs.is_dir():
        raise PipelineError(f"--docs {str(docs)!r} exists and is not a folder")
    parent = next((p for p in docs.absolute().parents if p.exists()), None)
    if not docs.exists() and (parent is None or not parent.is_dir()):
        raise PipelineError(f"--docs {str(docs)!r} cannot be made: {str(parent)!r} is not a folder")
    return docs


def page_folder(folder: str | os.PathLike) -> Path:
    """``folder`` made when absent (a study's docs folder or its ``figures/``), refused when it
    is a symbolic link or not a folder."""
    folder = Path(folder)
    if folder.is_symlink():
        raise PipelineError(f"{str(folder)!r} is a symbolic link; pages go into real folders")
    check_docs(folder)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def write_page(path: str | os.PathLike, text: str) -> Path:
    """Write the page ``path`` (UTF-8) atomically, never through a link; returns ``path``."""
    path = Path(path)
    page_folder(path.parent)
    write_atomic(path, text.encode("utf-8"))
    return path


def read_page(path: str | os.PathLike) -> str:
    """The text of an existing page (``""`` when absent); a link, a FIFO, a device, a file over
    :data:`MAX_PAGE` bytes or one not UTF-8 is refused in one line (``PipelineError``)."""
    try:
        data = read_plain(path, MAX_PAGE)
    except FileNotFoundError:
        return ""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise PipelineError(f"{str(path)!r} is not UTF-8 text; not a page of the tool's") from None


def as_named(path: str | os.PathLike) -> Path:
    """``path`` as a page names it: relative to the working directory when inside it (a committed
    page names ``runs/compare`` whichever absolute path made it), else as given."""
    path, here = Path(path), Path.cwd()
    return path.relative_to(here) if path.is_absolute() and path.is_relative_to(here) else path
