"""A run folder's saved pieces read back for ``load_run``: each a plain file of bounded size
(``store.files.read_plain``: a link, a FIFO or a device is refused), parsed with the task names
kept as written (``store.csv_cells.parse_csv``); a damaged piece is one line naming its file."""

from __future__ import annotations

import io
import json
import os

import pandas as pd

from interp_heads.errors import InputError, one_line
from interp_heads.store.csv_cells import csv_restore, parse_csv
from interp_heads.store.files import UnsafeFile, read_plain
from interp_heads.store.folder import RunFolder


def read_pieces(folder: RunFolder) -> dict:
    """``{piece: value or None}`` of everything a run folder holds."""
    return {name: _piece(path, parse) for name, (path, parse) in _pieces(folder).items()}


def _lines(data: bytes) -> pd.DataFrame:
    return pd.read_json(io.BytesIO(data), lines=True, dtype={"example_id": str, "task": str})


def _manifest(data: bytes) -> dict:
    obj = json.loads(data.decode("utf-8"))
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, found {type(obj).__name__}")
    return obj


def _pieces(folder: RunFolder) -> dict:
    """``{piece: (path, parse bytes)}`` of everything ``load_run`` reads."""
    table = lambda data: csv_restore(parse_csv(data))  # noqa: E731
    parquet = lambda data: pd.read_parquet(io.BytesIO(data))  # noqa: E731
    return {
        "manifest": (folder.manifest, _manifest),
        "baseline": (folder.baseline_csv, table),
        "attribution": (folder.attribution_parquet, parquet),
        "known": (folder.known_csv, table),
        "summary": (folder.summary_parquet, parquet),
        "records": (folder.sweep_parquet, parquet),
        "significance": (folder.significance_csv, table),
        "generations": (folder.generations, _lines),
        "prompts": (folder.prompts, _lines),
        "attention": (folder.attention, lambda data: json.loads(data.decode("utf-8"))),
        "sufficiency": (folder.sufficiency_csv, table),
        "sufficiency_curves": (folder.sufficiency_curves_csv, table),
        "sufficiency_verdicts": (folder.sufficiency_verdicts_csv, table),
        "sufficient_sets": (folder.sufficient_sets_csv, table),
    }


def _piece(path, parse):
    """One piece: None when absent (or an empty table), else parsed; a link, a FIFO, a device
    or a damaged file is an ``InputError`` naming the file."""
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
