"""A run folder's life around the steps: how a run starts, and what the tool removes on its own.

* **Start.** Before the first step runs, :func:`start` writes this invocation's manifest (its
  config, its task files' sha256 (``data``), ``plan``, and ``steps = []``: nothing finished
  yet), so from then on ``report DIR`` shows only what this config's finished steps wrote
  (``report.page``). A run that fails after a step finished is recorded as ``"failed"`` with
  its error; the same command resumes it.
* **Retire.** When the folder held another config (``--force``), the outputs its manifest lists as
  the tool's (``files.outputs``: tables, figures, ``index.html``) become ``files.retiring``: the
  earlier page is moved aside at the start, and once a step of the new run has finished the
  retiring files it did not rewrite are deleted (:func:`finish_retiring`). Killed at any point,
  the folder shows no earlier result as the new run's. If the run fails (bad input found by its
  first step, an error) before any step finished, the earlier manifest and page are put back
  (:func:`started`): a refused rerun leaves the earlier run as it was. Resume entries stay: their
  resume keys keep them from being reused under other inputs. Every table, figure and page a
  step or ``report`` writes is listed (:func:`note_outputs`).
* **Remove.** A folder this invocation created (``RunFolder.claim`` records it) is removed on the
  way out of a failed or interrupted command (:func:`removed_if_unused`) when it holds nothing a
  user or a resume needs: only the marker, the lock, the manifest and the sweep's config stamp, in
  the folder's own (empty) subfolders. A folder holding any result or resume entry stays; a folder
  that existed before the command is never removed.

Nothing here follows a symbolic link or deletes a file the tool did not write.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from interp_heads import store
from interp_heads.errors import PipelineError, one_line
from interp_heads.store.created_folders import created
from interp_heads.store.files import UnsafeFile, read_plain
from interp_heads.store.folder import RunFolder
from interp_heads.store.layout import MARKER, SUBFOLDERS


# --------------------------------------------------------------------------- start and retire
@contextlib.contextmanager
def started(exp, record, plan: list[str]) -> Iterator[None]:
    """Run the block as a started run (:func:`start`; ``exp``: the run's inputs, ``record``:
    its ``pipeline.record.RunRecord``). If it fails (an exception, not an
    interrupt) before any step finished, the folder gets back its earlier manifest and page;
    after a step finished, the manifest says ``status = "failed"`` and the error's one line
    (its config stays: rerunning the same command resumes after the finished steps)."""
    undo = start(exp, record, plan)
    try:
        yield
    except Exception as exc:
        with contextlib.suppress(OSError):
            if not record.manifest.steps:
                _restore(exp.folder, undo)
            else:
                record.write_manifest(exp, "failed", error=_error_line(exc))
        raise


def _error_line(exc: Exception) -> str:
    """The error as the CLI prints it: bad input as its message, anything else with its type."""
    if isinstance(exc, PipelineError):
        return one_line(exc)
    return f"{type(exc).__name__}: {one_line(exc)}"


def start(exp, record, plan: list[str]) -> dict:
    """Write the run's manifest (``record``'s) as started (``plan``, no step finished); after another config,
    list its outputs as retiring and move its ``index.html`` aside. Returns what undoes it."""
    folder = exp.folder
    try:
        earlier_bytes = read_plain(folder.manifest)
    except (OSError, UnsafeFile):  # absent, or no manifest of the tool's to put back
        earlier_bytes = None
    # the folder's manifest as the run's own type (``run.Manifest``, a layer above this one)
    earlier = record.manifest.from_dict(folder.read_manifest())
    files = dict(earlier.files or {})
    if earlier.config_digest != record.digest and files.get("outputs"):
        files["retiring"] = sorted({*(files.get("retiring") or []), *files["outputs"]})
        files["outputs"] = []
    manifest = record.manifest.with_updates(plan=list(plan), steps=[], files=files)
    if manifest.data is None:  # what a ranking was made on
        manifest = manifest.with_updates(data=_task_files(exp.tasks))
    record.manifest = manifest
    record.write_manifest(
        exp, "started"
    )  # from here on, the folder's tables are hidden until rewritten
    undo = {"manifest": earlier_bytes, "index": False}
    if folder.index.name in files.get("retiring", []) and _plain(folder.index):
        os.replace(folder.index, folder.retired_index)  # no stale page to open meanwhile
        undo["index"] = True
    return undo


def _task_files(tasks: dict) -> dict:
    """Each task's file (source, sha256) and examples used: ``ablate --ranking`` compares the
    ranking's task file with its own by this sha256."""
    return {
        name: {"source": t.source, "sha256": t.sha256, "n_examples": len(t)}
        for name, t in (tasks or {}).items()
    }


def finish_retiring(exp, record) -> None:
    """Delete the earlier config's outputs this run did not rewrite (once a step of it finished)."""
    files = dict(record.manifest.files or {})
    if "retiring" not in files:
        return
    names = files.pop("retiring")
    record.note(files=files)
    if not names:
        return
    mine = set(files.get("outputs") or [])
    reads = inputs(exp)
    left = retire(exp.folder, [n for n in names if n not in mine and n != exp.folder.index.name],
                  keep=reads)  # fmt: skip
    exp.folder.delete(exp.folder.retired_index)
    if left:
        record.note(files={**files, "retiring": left})


def _restore(folder: RunFolder, undo: dict) -> None:
    if undo["index"] and _plain(folder.retired_index):
        os.replace(folder.retired_index, folder.index)
    if undo["manifest"] is None:
        folder.delete(folder.manifest)
    else:
        store.write_atomic(folder.manifest, undo["manifest"])


def _plain(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


KEPT = (MARKER, store.LOCK_NAME, "manifest.json")  # never an earlier output, whatever is listed


def inputs(exp) -> set[Path]:
    """The files the run reads, resolved: each task's file, and every file the config names
    (``ranking = "g6/ranking.csv"``); a folder it names (``ranking = "g6"``, a run folder) stands
    for the ranking, manifest and resume entries in it. ``--force`` never deletes one of them."""
    found: set[Path] = set()
    names = [getattr(t, "source", "") for t in (getattr(exp, "tasks", None) or {}).values()]
    config = getattr(exp, "config", None)
    if config is not None:
        names += list(_strings(config.to_dict()))
    base = getattr(config, "base_dir", None)
    for name in names:
        if not name or len(name) > 4096 or "\0" in name:
            continue
        for path in {Path(name), *([Path(base) / name] if base else [])}:
            try:
                if path.is_file():
                    found.add(path.resolve())
                elif path.is_dir():
                    there = RunFolder(path)
                    found |= {p.resolve() for p in (there.ranking_csv, there.attribution_parquet,
                                                     there.manifest)}  # fmt: skip
                    found.add(there.root.resolve() / "attribution")
            except (OSError, ValueError):
                continue
    return found


def _strings(value) -> Iterator[str]:
    """Every text value in a config's nested dicts and lists."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v)


def retire(folder: RunFolder, names: Iterable, keep: set[Path] = frozenset()) -> list[str]:
    """Delete the listed outputs (paths relative to the folder), except the marker, the lock, the
    manifest and the files in ``keep`` (what the run reads: :func:`inputs`); returns those that
    stay."""
    left = []
    for name in names or []:
        if not isinstance(name, str) or not name:
            continue
        path = folder.root / name
        if name in KEPT or _read_by_run(path, keep):
            left.append(name)  # still listed: a later run without this input may retire it
            continue
        if not folder.delete(path) and (path.exists() or path.is_symlink()):
            left.append(name)  # not the tool's to delete (a link, a folder, outside): kept listed
    return left


def _read_by_run(path: Path, keep: set[Path]) -> bool:
    try:
        real = path.resolve()
    except (OSError, RuntimeError):
        return True  # unresolvable: not deleted
    return real in keep or any(k in real.parents for k in keep)


def note_outputs(manifest, folder: RunFolder, paths: Iterable[Path]):
    """``manifest`` (a ``run.Manifest``) with the written ``paths`` (inside ``folder``) added to
    its ``files.outputs``."""
    return manifest.with_updates(files=listed_outputs(manifest.files, folder, paths))


def listed_outputs(files: dict | None, folder: RunFolder, paths: Iterable[Path]) -> dict:
    """A manifest's ``files`` entry (a copy) with the written ``paths`` added to its ``outputs``."""
    files = dict(files or {})
    listed = set(files.get("outputs") or [])
    root = folder.root.absolute()
    for path in paths:
        path = Path(path).absolute()
        if path.is_file() and root in path.parents:
            listed.add(path.relative_to(root).as_posix())
    files["outputs"] = sorted(listed)
    return files


# --------------------------------------------------------------------------- remove
@contextlib.contextmanager
def removed_if_unused() -> Iterator[None]:
    """On a failure or interrupt inside the block, remove the run folders created inside it
    that hold nothing needed (:func:`holds_nothing_needed`)."""
    before = set(created)
    try:
        yield
    except BaseException:
        for root in [r for r in created if r not in before]:
            with contextlib.suppress(OSError):
                remove_unused(root, created[root])
        raise
    finally:
        for root in [r for r in created if r not in before]:
            del created[root]


def holds_nothing_needed(folder: RunFolder) -> bool:
    """Whether ``folder`` holds only what a command writes before its first result."""
    root = folder.root.absolute()
    scaffold = {root / store.LOCK_NAME}
    scaffold |= {p.absolute() for p in (folder.marker, folder.manifest, folder.conditions_config)}
    if folder.listed("outputs"):
        return False  # a step wrote tables or a page (a step that wrote nothing leaves none)
    for where, dirs, names in os.walk(root):  # never descends into a linked folder
        here = Path(where)
        if here != root and (here.parent != root or here.name not in SUBFOLDERS):
            return False
        if any((here / d).is_symlink() for d in dirs):
            return False
        if any(here / n not in scaffold and not _own_temp(n) for n in names):
            return False
    return True


def _own_temp(name: str) -> bool:
    """A temporary file of this process (an atomic write or the lock being taken)."""
    return store.temp_pid(name) == os.getpid()


def remove_unused(root: Path, top: Path) -> bool:
    """Remove ``root`` (made by this process, up from ``top``) if it holds nothing needed and no
    other process holds its lock; returns whether it went."""
    folder = RunFolder(root)
    lock = folder.root / store.LOCK_NAME
    if not root.is_dir() or root.is_symlink() or not holds_nothing_needed(folder):
        return False
    if lock.exists() and not store.holds(root):
        return False
    for path in (folder.manifest, folder.marker, folder.conditions_config):
        folder.delete(path)
    for where, _, names in os.walk(root):
        for n in names:
            if _own_temp(n):
                folder.delete(Path(where) / n)
    store.drop(root)
    chain = [root / n for n in SUBFOLDERS] + [root, *_parents(root, top)]
    for d in chain:
        if d.is_dir() and not d.is_symlink():
            with contextlib.suppress(OSError):  # not empty: someone else's, it stays
                d.rmdir()
    return not root.exists()


def _parents(root: Path, top: Path) -> list[Path]:
    """The folders above ``root`` up to and including ``top`` (those the command made too)."""
    if root == top or top not in root.parents:
        return []
    return [p for p in root.parents if p == top or top in p.parents]
