"""A task file's rows as ``(line number, object)``: JSONL (a JSON object per line, a key given twice
refused) or CSV (a header row, a column named twice refused); and what loading warns about."""

from __future__ import annotations

import csv
import io
import json
import warnings

from interp_heads.tasks.checking import normalize

MAX_TEXT_CHARS = 1_000_000  # one field; no model here reads a prompt of ~250,000 tokens


class TaskFormatError(ValueError):
    """A task file that cannot be used; the message names the file, the line and the reason."""


class TaskWarning(UserWarning):
    """A task file that loads but cannot measure what it seems to (e.g. a distractor that is the
    answer itself: no generation can then be correct)."""


class _KeyTwice(ValueError):
    pass


def _unique_keys(pairs: list) -> dict:
    """A JSON object's pairs as a dict; a key given twice is refused (JSON keeps the last one
    silently, so an edited field would be lost)."""
    seen = set()
    for key, _ in pairs:
        if key in seen:
            raise _KeyTwice(key)
        seen.add(key)
    return dict(pairs)


def jsonl_rows(text: str, where: str):
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            yield lineno, json.loads(line, object_pairs_hook=_unique_keys)
        except _KeyTwice as e:
            raise TaskFormatError(f"{where}:{lineno}: key {e.args[0]!r} given twice") from None
        except json.JSONDecodeError as e:
            raise TaskFormatError(f"{where}:{lineno}: invalid JSON ({e.msg})") from None
        except RecursionError:
            raise TaskFormatError(f"{where}:{lineno}: JSON nested too deeply") from None


def csv_rows(text: str, where: str):
    if csv.field_size_limit() < MAX_TEXT_CHARS + 1:  # a longer field: csv.Error, refused below
        csv.field_size_limit(MAX_TEXT_CHARS + 1)
    reader = csv.DictReader(io.StringIO(text))
    try:
        if reader.fieldnames is None:
            raise TaskFormatError(f"{where}:1: empty CSV file (a header row is required)")
        twice = sorted({c for c in reader.fieldnames if reader.fieldnames.count(c) > 1})
        if twice:
            raise TaskFormatError(f"{where}:1: the header names column {twice[0]!r} twice")
        for row in reader:
            lineno = reader.line_num
            if None in row:
                raise TaskFormatError(f"{where}:{lineno}: more values than header columns")
            yield lineno, {k: v for k, v in row.items() if v is not None}
    except csv.Error as exc:  # e.g. a field over the limit: more than MAX_TEXT_CHARS
        raise TaskFormatError(
            f"{where}:{reader.line_num}: unreadable CSV ({exc}; a field holds at most "
            f"{MAX_TEXT_CHARS:,} characters)"
        ) from None


def warn_answer_in_distractors(example, where: str) -> None:
    """Warn (:class:`TaskWarning`) when a distractor (a wrong candidate) is the answer or one of
    its aliases: the example then cannot tell a right answer from a wrong one."""
    right = {normalize(a) for a in (example.answer, *example.aliases)}
    same = [d for d in example.distractors if normalize(d) in right]
    if same:
        warnings.warn(
            f"{where}: distractor {same[0]!r} of example {example.id!r} is its answer (a "
            "distractor is a wrong candidate)",
            TaskWarning,
            stacklevel=2,
        )
