"""A run folder read back: :class:`Run`, one typed accessor per saved artefact.

This is the one door by which the report, the studies and the pipeline read a run folder.
Every file is named by ``store.layout`` (``RunFolder``) and read as a plain file of bounded
size (``store.files.read_plain``: a link, a FIFO or a device is refused in one line,
``UnsafeFile``, before a byte is read). CSV tables keep their name columns as written
(``store.csv_cells``). An artefact the folder lacks reads as ``None`` (also an empty table,
such as the significance table of a sweep without TopK); :meth:`Run.need` reads one that must
be there. A damaged file is one ``InputError`` line naming it. Each artefact is read once per
``Run`` and kept.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pandas as pd

from interp_heads.errors import InputError, one_line
from interp_heads.run.manifest import Manifest
from interp_heads.store.csv_cells import csv_restore, parse_csv
from interp_heads.store.files import UnsafeFile, read_plain
from interp_heads.store.folder import RunFolder


def _json(data: bytes):
    return json.loads(data.decode("utf-8"))


def _object(data: bytes) -> dict:
    obj = _json(data)
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, found {type(obj).__name__}")
    return obj


def _table(data: bytes) -> pd.DataFrame:
    return csv_restore(parse_csv(data))


def _parquet(data: bytes) -> pd.DataFrame:
    return pd.read_parquet(io.BytesIO(data))


def _lines(data: bytes) -> pd.DataFrame:
    return pd.read_json(io.BytesIO(data), lines=True, dtype={"example_id": str, "task": str})


# artefact -> (its path in the layout, how its bytes are parsed); the first fourteen are
# ``load_run``'s pieces, in its order
ARTEFACTS = {
    "manifest": ("manifest", _object),
    "baseline": ("baseline_csv", _table),
    "attribution": ("attribution_parquet", _parquet),
    "known": ("known_csv", _table),
    "summary": ("summary_parquet", _parquet),
    "records": ("sweep_parquet", _parquet),
    "significance": ("significance_csv", _table),
    "generations": ("generations", _lines),
    "prompts": ("prompts", _lines),
    "attention": ("attention", _json),
    "sufficiency": ("sufficiency_csv", _table),
    "sufficiency_curves": ("sufficiency_curves_csv", _table),
    "sufficiency_verdicts": ("sufficiency_verdicts_csv", _table),
    "sufficient_sets": ("sufficient_sets_csv", _table),
    # beyond ``load_run``'s pieces
    "summary_table": ("summary_csv", _table),  # summary.csv (draw_means as JSON text)
    "ranking": ("ranking_csv", _table),
    "known_entry": ("known_entry", _object),
    "specificity": ("specificity_csv", _table),
    "stability": ("stability_csv", _table),
    "sufficiency_records": ("sufficiency_parquet", _parquet),
    "sufficient_steps": ("sufficient_steps_csv", _table),
}
PIECES = tuple(ARTEFACTS)[:14]  # what ``load_run`` returns


class Run:
    """A run folder, read through typed accessors (``Run.open(path)``)."""

    def __init__(self, folder: RunFolder):
        self.folder = folder
        self._read: dict = {}

    @classmethod
    def open(cls, path: str | os.PathLike) -> Run:
        """The run folder at ``path``.

        Raises:
            TypeError: ``path`` is not a path.
            InputError: no such folder, or not a run folder (no manifest, summary or ranking).
        """
        if not isinstance(path, str | os.PathLike):
            raise TypeError(f"Run.open: expected a run folder's path, got {type(path).__name__}")
        if not os.path.isdir(path):
            raise InputError(f"{os.fspath(path)}: no such run folder")
        folder = RunFolder(path)
        if not folder.is_run():
            raise InputError(
                f"{os.fspath(path)}: not a run folder (no manifest.json, summary or attribution)"
            )
        return cls(folder)

    @classmethod
    def at(cls, path: str | os.PathLike) -> Run:
        """The folder at ``path`` read as a run folder without checking it is one (a study's
        reads of a folder it expects, whose missing files each fail on their own)."""
        return cls(RunFolder(path))

    @property
    def path(self) -> Path:
        return self.folder.root

    def __repr__(self) -> str:
        return f"Run({str(self.path)!r})"

    # ------------------------------------------------------------------ reading
    def read(self, name: str):
        """The artefact ``name`` (a key of ``ARTEFACTS``), ``None`` when absent or empty."""
        if name not in self._read:
            attr, parse = ARTEFACTS[name]
            self._read[name] = _piece(getattr(self.folder, attr), parse)
        return self._read[name]

    def need(self, name: str):
        """The artefact ``name``, which must be there.

        Raises:
            FileNotFoundError: the folder lacks it (naming the file).
        """
        value = self.read(name)
        if value is None:
            path = getattr(self.folder, ARTEFACTS[name][0])
            raise FileNotFoundError(2, "no such file in the run folder", str(path))
        return value

    def pieces(self) -> dict:
        """``{piece: value or None}``: what ``load_run`` returns."""
        return {name: self.read(name) for name in PIECES}

    # ------------------------------------------------------------------ typed accessors
    @property
    def manifest(self) -> Manifest:
        """The manifest (an empty one when the folder has none)."""
        return Manifest.from_dict(self.read("manifest"))

    def manifest_dict(self) -> dict:
        """The manifest as read (``{}`` when absent): for code that still takes a dict."""
        return dict(self.read("manifest") or {})

    @property
    def config(self) -> dict:
        return dict(self.manifest.config or {})

    @property
    def timings(self) -> dict:
        return dict(self.manifest.timings or {})

    baseline = property(lambda self: self.read("baseline"))
    attribution = property(lambda self: self.read("attribution"))
    known = property(lambda self: self.read("known"))
    known_entry = property(lambda self: self.read("known_entry"))
    summary = property(lambda self: self.read("summary"))
    records = property(lambda self: self.read("records"))
    significance = property(lambda self: self.read("significance"))
    generations = property(lambda self: self.read("generations"))
    prompts = property(lambda self: self.read("prompts"))
    attention = property(lambda self: self.read("attention"))
    ranking = property(lambda self: self.read("ranking"))
    specificity = property(lambda self: self.read("specificity"))
    stability = property(lambda self: self.read("stability"))
    sufficiency = property(lambda self: self.read("sufficiency"))
    sufficiency_curves = property(lambda self: self.read("sufficiency_curves"))
    sufficiency_verdicts = property(lambda self: self.read("sufficiency_verdicts"))
    sufficiency_records = property(lambda self: self.read("sufficiency_records"))
    sufficient_sets = property(lambda self: self.read("sufficient_sets"))
    sufficient_steps = property(lambda self: self.read("sufficient_steps"))

    def summary_any(self) -> pd.DataFrame | None:
        """The sweep summary: ``summary.parquet``, else ``summary.csv``."""
        return (
            self.summary
            if os.path.lexists(self.folder.summary_parquet)
            else (self.read("summary_table"))
        )

    # ------------------------------------------------------------------ rankings
    def scores(self, task: str):
        """The stored ranking of ``task`` (``attribution/<task>.json``) as ``HeadScores``,
        ``None`` when the folder has none. Its checksum field is dropped, as on resume."""
        return self.scores_entry(self.folder.attribution_entry(task))

    @staticmethod
    def scores_entry(path: str | os.PathLike):
        """A stored ``HeadScores`` resume entry (``attribution/<task>.json``), ``None`` when
        absent: the one reader of a run folder's ranking entries."""
        from interp_heads.attribution import HeadScores

        entry = _piece(Path(path), _object)
        if entry is None:
            return None
        return HeadScores.from_dict({k: v for k, v in entry.items() if k != "_sha256"})

    def rankings(self) -> dict:
        """``{task: HeadScores}`` of every task in ``attribution.parquet`` (``{}`` without it),
        in the table's order, each in its stored rank order."""
        from interp_heads.attribution import HeadScores

        attr = self.attribution
        if attr is None or not len(attr):
            return {}
        return {str(t): HeadScores.from_frame(g) for t, g in attr.groupby("task", sort=False)}

    def ranked_heads(self) -> dict[str, list[tuple[int, int]]]:
        """``{task: [(layer, head), ...]}`` in rank order, from ``ranking.csv``."""
        frame = self.need("ranking").sort_values(["task", "rank"])
        return {
            t: [(int(layer), int(head)) for layer, head in zip(g["layer"], g["head"], strict=True)]
            for t, g in frame.groupby("task", sort=False)
        }


def _piece(path: Path, parse):
    """One artefact: None when absent (or an empty table), else parsed; a link, a FIFO or a
    device is ``UnsafeFile``; a damaged file an ``InputError`` naming the file."""
    if not os.path.lexists(path):
        return None
    try:
        return parse(read_plain(path))
    except pd.errors.EmptyDataError:  # e.g. significance.csv of a sweep without TopK
        return None
    except UnsafeFile:
        raise
    except Exception as exc:  # pyarrow/pandas name a '<Buffer>', not the file
        raise InputError(f"{path}: unreadable ({one_line(exc)})") from None
