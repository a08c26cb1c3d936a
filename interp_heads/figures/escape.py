"""The one way a value reaches a page: :func:`esc`, for every text the report shows.

A run folder is shared between people, and anything in it (``manifest.json``, the CSV and parquet
tables, ``generations.jsonl``, ``heads/*.csv``) may have been edited by hand. So every value read
from it is text, never markup: the page's modules (``report.html``, ``page``, ``tables``,
``which_heads`` and the notebook display) build their HTML from constant markup and values passed
through :func:`esc` (one value), :func:`esc_num` (a number, formatted, or else escaped text) or
:func:`esc_table` (a table). :func:`esc` also drops the Unicode bidirectional controls, so a name
holding U+202E cannot reverse the text of a title or a table cell.
"""

from __future__ import annotations

import html
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas loads with the first table: the command line's error lines need none
    import pandas as pd

# embeddings and overrides of the text direction: U+200E/F, U+202A-U+202E, U+2066-U+2069
BIDI = re.compile("[\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def strip_bidi(text: str) -> str:
    """``text`` without the Unicode bidirectional control characters."""
    return BIDI.sub("", text)


def esc(value, newlines: bool = False) -> str:
    """``value`` as HTML text: ``str(value)`` with ``& < > " '`` escaped and bidi controls dropped.

    ``None`` is ``""``; ``newlines``: a newline becomes ``<br>`` (multi-line answers).
    """
    text = html.escape(strip_bidi("" if value is None else str(value)), quote=True)
    return text.replace("\n", "<br>") if newlines else text


def esc_num(value, spec: str = "") -> str:
    """A number formatted by ``spec`` (``".2f"``); anything else (a hand-edited manifest's
    string) as escaped text, so a damaged value shows instead of breaking the page."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return format(value, spec)
    return esc(value)


def num_or_blank(value, spec: str = ".2f") -> str:
    """A table cell's number formatted by ``spec``; blank where there is none (None or nan: a
    cell with n = 1 has no spread, a ratio with a zero baseline has no value)."""
    return "" if value is None or value != value else format(value, spec)


def esc_table(frame: pd.DataFrame, newlines: bool = False) -> str:
    """``frame`` as an HTML table: every header and text cell through :func:`esc`, numbers as
    pandas prints them (they cannot hold markup)."""
    import pandas as pd

    cells = frame.copy()
    for col in cells.columns:
        if not (
            pd.api.types.is_numeric_dtype(cells[col]) or pd.api.types.is_bool_dtype(cells[col])
        ):
            cells[col] = cells[col].map(lambda v: "" if _missing(v) else esc(v, newlines))
    cells.columns = [esc(c) for c in frame.columns]
    return cells.to_html(index=False, escape=False, border=0, na_rep="")


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and value != value)


_TAG_START = re.compile(r"<(?! )")  # a "<" that CommonMark could read as a tag or an autolink
_MD_PUNCT = re.compile(r"([\\`*_\[\]{}()#+\-!|~])")  # what Markdown reads as syntax


def md(value) -> str:
    """``value`` as inert text in a Markdown page (a task name, a file or folder name, a label):
    bidi controls dropped, ``& < >`` as entities (no HTML tag; a ``<`` before a space, which
    CommonMark never reads as a tag or an autolink, is kept), Markdown punctuation (backticks,
    pipes, brackets, ``#``, ``*``, ``_``...) backslash-escaped, and every line break or other
    control character written as visible ``\\n``-style text, so a value can neither close a code
    span, open a table cell, start a heading nor carry live HTML. Never put the result inside
    backticks (a code span shows backslashes as they are)."""
    text = strip_bidi("" if value is None else str(value))
    text = text.replace("&", "&amp;").replace(">", "&gt;")
    text = _TAG_START.sub("&lt;", text)  # "0.37 < 0.90" stays readable: "< " opens no tag
    text = _MD_PUNCT.sub(lambda m: m[0] if _inside_word(text, m) else "\\" + m[0], text)
    return "".join(_visible(c) if ord(c) < 32 or ord(c) == 127 else c for c in text)


def _inside_word(text: str, m: re.Match) -> bool:
    """An ``_`` between two letters or digits (``tiny_echo``): CommonMark never reads it as
    emphasis, so it stays as written."""
    i = m.start()
    return (
        m[0] == "_"
        and 0 < i < len(text) - 1
        and _WORD.match(text[i - 1]) is not None
        and _WORD.match(text[i + 1]) is not None
    )


_WORD = re.compile(r"[^\W_]")


def _visible(char: str) -> str:
    """A control character as escaped text (``\\n``, ``\\x07``), its backslash itself escaped."""
    shown = repr(char)[1:-1]  # '\\n', '\\t', '\\x07'
    return shown.replace("\\", "\\\\")


_IDENTIFIER = re.compile(r"[A-Za-z0-9_./][A-Za-z0-9_.+@/-]*")  # a method, a path, a digest


def md_code(value) -> str:
    """``value`` as a code span when it is a plain identifier (a method's name, a config file's
    path, a digest: what the tool writes), else as :func:`md` text: a name read from a file that
    holds a backtick, a tag or a newline cannot close the span, so it is shown as escaped text."""
    text = "" if value is None else str(value)
    return f"`{text}`" if _IDENTIFIER.fullmatch(text) else md(text)


def md_command(text: str, *values) -> str:
    """A command line, ``text`` with ``{}`` for each of ``values`` (run folders, paths): one code
    span when every value is a plain identifier (:func:`md_code`), else the whole line as
    :func:`md` text, so a folder's backtick cannot close the span."""
    line = text.format(*map(str, values))
    return f"`{line}`" if all(_IDENTIFIER.fullmatch(str(v)) for v in values) else md(line)


def md_link(target) -> str:
    """``target`` (a relative path the tool made, e.g. a figure's) as a Markdown link
    destination: percent-encoded, so no space, bracket, parenthesis, newline or ``:`` of a
    folder's name can end the link or give it a scheme (``javascript:``)."""
    from urllib.parse import quote

    return quote(strip_bidi(str(target)), safe="/")


def md_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its text cells through :func:`md` (numbers untouched; the column names are
    the page's own, read by name): a table a study page prints from a run folder's files."""
    import pandas as pd  # here, not at import: the CLI's early checks import this module

    cells = frame.copy()
    for col in cells.columns:
        if not (
            pd.api.types.is_numeric_dtype(cells[col]) or pd.api.types.is_bool_dtype(cells[col])
        ):
            cells[col] = cells[col].map(
                lambda v: v if _missing(v) or not isinstance(v, str) else md(v)
            )
    return cells
