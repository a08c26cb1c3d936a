"""CSV cells a spreadsheet cannot run: every CSV the tool writes goes through :func:`csv_safe`.

A spreadsheet runs a cell that starts with ``=``, ``+``, ``-`` or ``@`` (or a tab or carriage
return) as a formula, so a task file named ``=HYPERLINK("...").jsonl`` would become a live link
in ``summary.csv``. :func:`csv_safe` prefixes such *text* cells with a single quote (the
spreadsheets' own mark for "text"); numbers, also negative ones, stay numbers. :func:`csv_restore`
undoes it on the tool's own reads (``ranking.csv`` read back by ``ablate --ranking``), so a task
name survives the round trip.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas loads with the first table, not with the store (the CLI's checks)
    import pandas as pd

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
QUOTE = "'"


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def safe_cell(value):
    """``value``, quoted when it is text a spreadsheet would run as a formula."""
    if isinstance(value, str) and value.startswith(FORMULA_START) and not _is_number(value):
        return QUOTE + value
    return value


def restore_cell(value):
    """Inverse of :func:`safe_cell` for a cell read back."""
    if isinstance(value, str) and value.startswith(QUOTE) and value[1:].startswith(FORMULA_START):
        return value[1:]
    return value


def _map_text(frame: pd.DataFrame, func) -> pd.DataFrame:
    import pandas as pd

    out = frame.copy()
    for col in out.columns:
        if out[col].dtype == object or pd.api.types.is_string_dtype(out[col]):
            out[col] = out[col].map(func)
    out.columns = [func(c) for c in out.columns]
    return out


def csv_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every text cell (and header) that would run as a formula quoted."""
    return _map_text(frame, safe_cell)


def csv_restore(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` read from a CSV of the tool, its quoted text cells as they were."""
    return _map_text(frame, restore_cell)


def write_csv(frame: pd.DataFrame, path: str | os.PathLike) -> Path:
    """``frame`` to ``path`` as CSV, every cell safe (no index column)."""
    csv_safe(frame).to_csv(path, index=False)
    return Path(path)


# Columns of names: read as written ('NA', '007' and 'null' are task names, not missing values
# or numbers); every other column keeps pandas' reading (numbers, and its missing-value words).
NAME_COLUMNS = ("task", "label", "example_id", "selection", "metric", "method", "source", "target")
_MISSING = ["", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
            "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"]  # fmt: skip


def parse_csv(data: bytes, **kwargs) -> pd.DataFrame:
    """A CSV's bytes as a frame, the :data:`NAME_COLUMNS` as strings exactly as written."""
    import pandas as pd

    header = pd.read_csv(io.BytesIO(data), nrows=0, **kwargs).columns
    names = [c for c in header if restore_cell(str(c)) in NAME_COLUMNS]
    missing = {c: _MISSING for c in header if c not in names}
    return pd.read_csv(
        io.BytesIO(data), dtype=dict.fromkeys(names, str), keep_default_na=False,
        na_values=missing, **kwargs,
    )  # fmt: skip


def read_csv(path: str | os.PathLike) -> pd.DataFrame:
    """A CSV of the tool's run folder read back (a plain file, bounded: ``store.files``), its
    name columns as strings and its quoted text cells as they were (:func:`csv_restore`)."""
    from interp_heads.store.files import read_plain

    return csv_restore(parse_csv(read_plain(path)))
