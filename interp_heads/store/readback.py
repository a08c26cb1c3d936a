"""A run folder's tables and JSON files read back by the study pages: each a plain file of
bounded size (``store.files.read_plain``: a link, a FIFO or a device is refused in one line,
:class:`~interp_heads.store.files.UnsafeFile`, before a byte is read), CSV name columns kept as
strings (``store.csv_cells.read_csv``)."""

from __future__ import annotations

import io
import json
import os

import pandas as pd

from interp_heads.store.csv_cells import read_csv
from interp_heads.store.files import read_plain

__all__ = ["read_csv", "read_json", "read_parquet", "read_table"]


def read_parquet(path: str | os.PathLike) -> pd.DataFrame:
    """A parquet table of a run folder."""
    return pd.read_parquet(io.BytesIO(read_plain(path)))


def read_json(path: str | os.PathLike):
    """A JSON file of a run folder (a manifest, a resume entry)."""
    return json.loads(read_plain(path).decode("utf-8"))


def read_table(path: str | os.PathLike) -> pd.DataFrame:
    """A ``.parquet`` or ``.csv`` table of a run folder, by its suffix."""
    return read_parquet(path) if str(path).endswith(".parquet") else read_csv(path)
