"""The run folder: the one owner of every artifact path, its atomic writes and its resume entries.

Nothing else in the package spells a file name of a run folder: the names are
:class:`~interp_heads.store.layout.FolderLayout`'s (its docstring draws the layout), and
:class:`RunFolder` adds the behaviour.

Task names become file names only through :func:`interp_heads.store.names.safe_name`. A folder is taken
as a run folder when it is new or empty, carries the marker, or holds a manifest written by the
tool; any other non-empty folder is refused unless ``force`` (and even then nothing of the user's
is deleted: the tool deletes only files the manifest lists as its own, :meth:`RunFolder.delete`).
The folder's own subfolders must not be symbolic links, so no write or delete leaves the folder.

Every file is written through a temporary file, ``fsync`` and a rename (``store.atomic``), so
a run killed at any point leaves each file either complete or absent.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from interp_heads import store
from interp_heads.errors import PipelineError
from interp_heads.store.created_folders import note_created
from interp_heads.store.csv_cells import write_csv
from interp_heads.store.files import (
    UnsafeFile,
    create_new,
    first_link,
    is_plain,
    linked_folders,
    make_folder,
    read_plain,
)
from interp_heads.store.layout import MARKER, SUBFOLDERS, FolderLayout

if TYPE_CHECKING:  # pandas loads with the first table: a folder check needs no pandas
    import pandas as pd

MAX_MANIFEST = 64 * 2**20  # a manifest lists a run's files and settings: a few MB at most
RANKING_COLUMNS = ["task", "rank", "label", "layer", "head", "score", "method"]


@dataclass(frozen=True, init=False)
class RunFolder(FolderLayout):
    """Paths (:class:`FolderLayout`) and writers of one run folder (``RunFolder("runs/demo")``)."""

    def is_run(self) -> bool:
        """Whether the folder holds something a report can be built from."""
        return any(
            p.exists() for p in (self.manifest, self.summary_parquet, self.attribution_parquet)
        )

    def is_run_folder(self) -> bool:
        """The folder carries the marker, or a manifest written by the tool (older run folders)."""
        if self.marker.is_file():
            return True
        return "config_digest" in self.read_manifest()

    def check_links(self) -> None:
        """``PipelineError`` when one of the folder's own subfolders, or any folder inside one of
        them at any depth (``heads/sufficiency``, ``heads/sufficient_sets/<task>/conditions``),
        is a symbolic link: nothing the tool writes or deletes may leave the folder."""
        linked = linked_folders(self.root, SUBFOLDERS)
        if linked:
            raise PipelineError(
                f"{str(linked[0])!r} is a symbolic link; a run folder's own folders "
                "must be real folders inside it"
            )

    def delete(self, path: Path) -> bool:
        """Delete ``path`` if it is a plain file in the folder or in one of its own folders (at
        any depth), reached without a link.

        Never follows a link: a symlink, a folder on the way that is a link, a file outside the
        folder or a folder is left alone. Returns whether the file was deleted.
        """
        path = Path(os.path.abspath(path))
        root = Path(os.path.abspath(self.root))
        if root not in path.parents:
            return False
        inside = path.parent == root or path.relative_to(root).parts[0] in SUBFOLDERS
        if not inside or first_link(root, path) is not None or not is_plain(path):
            return False
        path.unlink(missing_ok=True)
        return True

    def clean_temps(self) -> None:
        """Delete the temporary files killed writes of dead processes left: only names the tool
        makes (``store.temp_path``: ``.NAME.interp-heads-tmpPID``), never a user's ``.x.tmp1``.
        A link under such a name is never the tool's (it writes plain files only): the link
        itself is removed, whoever's pid it names, and its target is left alone."""
        for where in (self.root, *(self.root / n for n in SUBFOLDERS)):
            if not where.is_dir() or where.is_symlink():
                continue
            for p in where.iterdir():
                pid = store.temp_pid(p.name)
                if pid is not None and p.is_symlink():
                    p.unlink(missing_ok=True)
                elif pid is not None and pid != os.getpid() and not store.pid_alive(pid):
                    self.delete(p)

    def listed(self, kind: str) -> list[str]:
        """Names of the ``kind`` files (e.g. ``"conditions"``) the manifest records as the tool's."""
        files = self.read_manifest().get("files")
        names = files.get(kind) if isinstance(files, dict) else None
        return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []

    # ------------------------------------------------------------------ lifecycle
    def claim(self, digest: str, force: bool = False) -> None:
        """Create the folder, take its lock, refuse a folder of another config (unless ``force``).

        The lock (``store.acquire``) is held until the enclosing ``store.held_locks``
        ends. A damaged ``manifest.json`` is reported and treated as absent: the resume keys of
        every stored unit keep its results from being reused under other inputs.
        """
        out_dir = self.root
        self.check_usable(force)
        top = _first_missing(out_dir)
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
            if top is not None:  # made by this invocation: removed again if it stays unused
                note_created(out_dir, top)
            probe = store.temp_path(out_dir / "write-probe")
            os.close(create_new(probe))  # never through a link planted under its name
            probe.unlink()
        except OSError as exc:
            raise PipelineError(
                f"output directory {str(out_dir)!r} is not writable ({exc.strerror or exc})"
            ) from None
        self.lock()
        self.clean_temps()
        if not self.marker.exists():
            store.write_atomic(self.marker, json.dumps({"tool": "interp_heads"}) + "\n")
        if self.manifest.exists():
            entry = store.read_entry(self.manifest, {"config_digest": str}, checksum=False)
            theirs = entry.get("config_digest") if entry else None
            if entry is not None and theirs != digest and not force:
                raise PipelineError(
                    f"{str(out_dir)!r} holds a run with a different config; use --force or "
                    "another --out"
                )

    def check_usable(self, force: bool = False) -> None:
        """Refuse (``PipelineError``, nothing written) a path that is not a directory, a non-empty
        folder that is not a run folder (unless ``force``), or one with linked subfolders."""
        if self.root.exists() and not self.root.is_dir():
            raise PipelineError(f"output {str(self.root)!r} exists and is not a directory")
        if (
            self.root.is_dir()
            and not force
            and any(self.root.iterdir())
            and not self.is_run_folder()
        ):
            raise PipelineError(
                f"{str(self.root)!r} is not empty and is not an interp-heads run folder; give a new "
                "or empty folder (or --force to write the tool's files into it)"
            )
        self.check_links()

    def make_folder(self, path: Path) -> Path:
        """Make ``path`` inside the folder (and the folders above it), never through a link
        (one line, ``PipelineError``, naming the link)."""
        try:
            return make_folder(self.root, path)
        except UnsafeFile as exc:
            raise PipelineError(str(exc)) from None

    def lock(self) -> None:
        """Take the single-writer lock (``PipelineError`` when a live process holds it)."""
        try:
            store.acquire(self.root)
        except store.RunFolderBusy as exc:
            raise PipelineError(str(exc)) from None

    def ranking_file(self) -> Path:
        """The folder's ranking table: ``ranking.csv``, else ``attribution.parquet``."""
        return next(
            (p for p in (self.ranking_csv, self.attribution_parquet) if p.exists()),
            self.ranking_csv,
        )

    def read_manifest(self) -> dict:
        """The manifest as a dict; ``{}`` when absent or unreadable."""
        try:
            d = json.loads(read_plain(self.manifest, MAX_MANIFEST))
        except (OSError, ValueError, RecursionError):  # absent, a link or FIFO, damaged, too deep
            return {}
        return d if isinstance(d, dict) else {}

    def write_manifest(self, manifest: dict) -> None:
        store.write_atomic(self.manifest, json.dumps(manifest, indent=1, default=str))

    def step_outputs(self, step: str) -> list[Path]:
        """The tables step ``step`` writes (its resume entries aside), as listed in the manifest."""
        tables = {
            "baseline": [self.baseline_csv],
            "attribute": [self.attribution_parquet, self.ranking_csv],
            "tables": [self.sweep_parquet, self.summary_parquet, self.summary_csv,
                       self.significance_csv, self.generations, self.prompts],
            "attention": [self.attention],
            "specificity": [self.specificity_csv],
            "stability": [self.stability_csv],
            "sufficiency": [self.sufficiency_csv, self.sufficiency_curves_csv,
                            self.sufficiency_verdicts_csv, self.sufficiency_parquet,
                            self.sufficient_sets_csv, self.sufficient_steps_csv],
        }  # fmt: skip
        return tables.get(step, [])

    # ------------------------------------------------------------------ tables
    def write_frame(self, path: Path, frame: pd.DataFrame) -> None:
        """``frame`` to ``path`` (``.csv`` or ``.parquet``), atomically; a CSV's text cells
        through ``store.csv_cells.csv_safe``. A table of one of the folder's own subfolders
        (``heads/stability.csv``) makes that subfolder (never through a link)."""
        if path.parent != self.root:
            self.check_links()
            self.make_folder(path.parent)
        with store.atomic(path) as tmp:
            if path.suffix == ".parquet":
                frame.to_parquet(tmp, index=False)
            else:  # text cells a spreadsheet would run as formulas are quoted
                write_csv(frame, tmp)

    def write_rankings(self, rankings: dict) -> pd.DataFrame:
        """``attribution.parquet`` and ``ranking.csv`` from ``{task: HeadScores}``; the frame."""
        import pandas as pd

        frame = pd.concat([s.to_frame() for s in rankings.values()], ignore_index=True)
        self.write_frame(self.attribution_parquet, frame)
        self.write_frame(self.ranking_csv, frame.sort_values(["task", "rank"])[RANKING_COLUMNS])
        return frame

    # ------------------------------------------------------------------ resume entries
    def save_scores(self, task: str, scores) -> None:
        """A task's ``HeadScores`` as its resume entry (atomic, checksummed)."""
        path = self.attribution_entry(task)
        self.make_folder(path.parent)
        scores.save(path)

    def read_baseline(self, task: str) -> dict | None:
        """A verified baseline entry (``key``, ``row``, ``ok``), else None (damaged ones warned)."""
        return store.read_entry(self.baseline_entry(task), {"key": str, "row": dict, "ok": list})

    def read_known(self) -> dict | None:
        """The verified known-heads entry (``key``, ``scores``), else None (damaged ones warned)."""
        return store.read_entry(self.known_entry, {"key": str, "scores": dict})

    def write_known(self, entry: dict) -> None:
        store.write_entry(self.known_entry, entry)

    def write_baseline(self, task: str, entry: dict) -> None:
        path = self.baseline_entry(task)
        self.make_folder(path.parent)
        store.write_entry(path, entry)


def check_within_run(path: str | os.PathLike) -> None:
    """``PipelineError`` when ``path`` (a sweep's folder such as ``<run>/heads/sufficiency``) is
    reached through a symbolic link below the run folder holding it: the topmost folder above it
    that carries the run folder marker (a marker planted in a linked folder further down changes
    nothing). A link above that folder is the user's own path to it; with no marker above,
    ``path`` itself must not be a link."""
    path = Path(os.path.abspath(path))
    roots = [p for p in path.parents if (p / MARKER).is_file()]
    link = first_link(roots[-1], path) if roots else (path if path.is_symlink() else None)
    if link is not None:
        raise PipelineError(
            f"{str(link)!r} is a symbolic link; a run folder's own folders must be real "
            "folders inside it"
        )


def _first_missing(path: Path) -> Path | None:
    """The topmost folder of ``path`` that does not exist yet (None: ``path`` exists)."""
    path = Path(path).absolute()
    if path.exists() or path.is_symlink():
        return None
    while not path.parent.exists():
        path = path.parent
    return path
