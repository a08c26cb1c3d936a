"""Reading and writing task files: the built-in JSONL suites and users' own JSONL or CSV files.

A task file has one example per JSONL line (or CSV row) with at least ``prompt`` and ``answer``;
``question`` defaults to the prompt, ``id`` to the line number, ``aliases`` to none (a JSON list,
or ``|``-separated in CSV). The task's name is the file stem (a built-in task's name); a ``task``
field, when given, must be the same on every row and is kept on each example, but never renames
the task. ``corrupted_prompt`` and
``corrupted_answer`` are optional, and so are ``distractors`` (wrong candidates that the prompt
contains: an answer naming one is wrong; a JSON list, or ``|``-separated in CSV) and ``meta`` (a
JSON object of per-row facts for breakdowns). The prompt format may be declared by the file: a
``fmt`` field (``chat``, ``plain`` or ``cognitive_mirrors``, the same on every row) or a header
line ``{"fmt": "plain"}`` before the first example (JSONL). Every problem raises
:class:`TaskFormatError` with a one-line message ``<file>:<line>: <reason>`` (``<file>: <reason>``
when no line is at fault: a missing file, an unknown task name). See
``docs/tasks.md``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from interp_heads.tasks.checking import normalize
from interp_heads.tasks.rows import (  # noqa: F401 (TaskFormatError, MAX_TEXT_CHARS re-exported)
    MAX_TEXT_CHARS,
    TaskFormatError,
    TaskWarning,
    csv_rows,
    jsonl_rows,
    warn_answer_in_distractors,
)
from interp_heads.tasks.schema import BUILTIN_TASKS, EXTRA_TASKS, Example, Task

FIELDS = (
    "id", "task", "prompt", "question", "answer", "aliases", "corrupted_prompt", "corrupted_answer",
    "distractors", "meta",
)  # fmt: skip
FORMATS = ("chat", "plain", "cognitive_mirrors")
HEADER_KEYS = {"fmt", "name", "description"}
REQUIRED = ("prompt", "answer")
_STRING_FIELDS = (
    "id",
    "task",
    "prompt",
    "question",
    "answer",
    "corrupted_prompt",
    "corrupted_answer",
)


# The built-in prompts are plain completion prompts: SmolLM2-135M-Instruct answers them far more
# often than the same items wrapped in its chat template (see docs/tasks.md).
BUILTIN_FORMAT = "plain"


_SURROGATE = re.compile("[\ud800-\udfff]")
MAX_FILE_BYTES = 512 * 2**20  # a task file; the largest built-in one is 1.3 MB


def data_dir() -> Path:
    """Folder of the built-in task files: ``$INTERP_HEADS_DATA`` or the repository's data/tasks."""
    env = os.environ.get("INTERP_HEADS_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "data" / "tasks"


def list_tasks() -> list[str]:
    """Names of the built-in tasks that have a data file, in the canonical order."""
    root = data_dir()
    return [name for name in BUILTIN_TASKS + EXTRA_TASKS if (root / f"{name}.jsonl").is_file()]


def _example(row: object, lineno: int, default_task: str, where: str) -> Example:
    def fail(reason: str):
        raise TaskFormatError(f"{where}:{lineno}: {reason}")

    if not isinstance(row, dict):
        fail(f"expected a JSON object, got {type(row).__name__}")
    for key in REQUIRED:
        if key not in row or row[key] is None:
            what = "column" if where.lower().endswith(".csv") else "field"
            fail(f"missing {what} '{key}'{_hint(row, key, what)}")
    for key in _STRING_FIELDS:
        if key in row and row[key] is not None and not isinstance(row[key], str):
            if key == "id" and isinstance(row[key], int) and not isinstance(row[key], bool):
                continue
            fail(f"field '{key}' must be a string, got {type(row[key]).__name__}")
    if not row["prompt"].strip():
        fail("empty prompt")
    if not row["answer"].strip():
        fail("empty answer")
    if not normalize(row["answer"], keep_articles=True):
        fail(
            f"answer {row['answer']!r} has no letter or digit (nothing to check a generation against)"
        )
    for key in _STRING_FIELDS:
        if isinstance(row.get(key), str) and len(row[key]) > MAX_TEXT_CHARS:
            fail(f"field '{key}' is {len(row[key]):,} characters; at most {MAX_TEXT_CHARS:,}")
        if isinstance(row.get(key), str) and _SURROGATE.search(row[key]):
            fail(f"field '{key}' holds a lone surrogate (not valid Unicode text)")
    lists = {}
    for key in ("aliases", "distractors"):
        value = row.get(key) or []
        if isinstance(value, str):
            value = [a for a in value.split("|") if a.strip()]
        if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
            fail(f"field '{key}' must be a list of strings")
        lists[key] = tuple(value)
    meta = row.get("meta") or {}
    if not isinstance(meta, dict):
        fail("field 'meta' must be a JSON object")
    if row.get("fmt") not in (None, "", *FORMATS):
        fail(f"field 'fmt' must be one of {', '.join(FORMATS)}, got {row.get('fmt')!r}")
    cp, ca = row.get("corrupted_prompt") or None, row.get("corrupted_answer") or None
    if (cp is None) != (ca is None):
        fail("'corrupted_prompt' and 'corrupted_answer' must be given together")
    return Example(
        id=str(row["id"]) if row.get("id") not in (None, "") else str(lineno),
        task=row.get("task") or default_task,
        prompt=row["prompt"],
        answer=row["answer"],
        question=row.get("question") or row["prompt"],
        aliases=lists["aliases"],
        corrupted_prompt=cp,
        corrupted_answer=ca,
        distractors=lists["distractors"],
        meta=dict(meta),
    )


def _hint(row: dict, key: str, what: str = "field") -> str:
    """Why a required field may be missing: a near name (``Prompt``, `` prompt``), semicolons,
    else the names the row has (a CSV's header columns), so a misnamed one shows."""
    near = [k for k in row if isinstance(k, str) and k.strip().lower() == key and k != key]
    if near:
        return f" (found {near[0]!r}; {what} names are lower case, without spaces)"
    if any(isinstance(k, str) and ";" in k for k in row):
        return " (the header holds ';': CSV task files are comma-separated)"
    names = [repr(k) for k in row][:12]
    more = f" and {len(row) - 12} more" if len(row) > 12 else ""
    found = f"{what}s found: {', '.join(names)}{more}" if names else f"no {what}s"
    return f" ({found}; a task needs {' and '.join(map(repr, REQUIRED))})"


def read_task_file(path: str | os.PathLike, name: str | None = None) -> Task:
    """Parse and validate a JSONL or CSV task file."""
    path = Path(path)
    where = shown(path.name)  # a name with a newline stays one line, shown escaped
    try:
        raw = _read(path, where)
    except OSError as exc:  # a name too long, a permission, an I/O error: the input is unusable
        raise TaskFormatError(f"{where[:80]}: cannot read ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        lineno = raw[: e.start].count(b"\n") + 1
        raise TaskFormatError(f"{where}:{lineno}: not valid UTF-8 (byte {e.start})") from None
    rows = csv_rows(text, where) if path.suffix.lower() == ".csv" else jsonl_rows(text, where)
    default_task = name or path.stem
    examples, seen = [], {}
    fmts: dict[str, int] = {}
    for lineno, row in rows:
        if not examples and _is_header(row):
            if row.get("fmt") not in (None, *FORMATS):
                raise TaskFormatError(
                    f"{where}:{lineno}: header 'fmt' must be one of {', '.join(FORMATS)}"
                )
            if row.get("fmt"):
                fmts.setdefault(row["fmt"], lineno)
            continue
        ex = _example(row, lineno, default_task, where)
        warn_answer_in_distractors(ex, f"{where}:{lineno}")
        if row.get("fmt"):
            fmts.setdefault(row["fmt"], lineno)
        if ex.id in seen:
            raise TaskFormatError(
                f"{where}:{lineno}: duplicate id '{ex.id}' (first on line {seen[ex.id]})"
            )
        seen[ex.id] = lineno
        if examples and ex.task != examples[0].task:
            raise TaskFormatError(
                f"{where}:{lineno}: task {ex.task!r} differs from task {examples[0].task!r} of the "
                "first example (one task per file)"
            )
        examples.append(ex)
    if not examples:
        raise TaskFormatError(f"{where}: no examples")
    if len(fmts) > 1:
        (a, la), (b, lb) = sorted(fmts.items(), key=lambda kv: kv[1])[:2]
        raise TaskFormatError(f"{where}:{lb}: fmt {b!r} differs from fmt {a!r} on line {la}")
    meta = {"fmt": next(iter(fmts)), "fmt_source": "file"} if fmts else {}
    return Task(
        name=default_task,
        examples=examples,
        source=str(path),
        sha256=hashlib.sha256(raw).hexdigest(),
        meta=meta,
    )


def shown(path) -> str:
    """``path`` as text for a one-line message: control characters (a newline) written escaped
    (``\\n``), not cutting the message."""
    return "".join(repr(c)[1:-1] if ord(c) < 32 or ord(c) == 127 else c for c in str(path))


def _read(path: Path, where: str) -> bytes:
    """The file's bytes; ``TaskFormatError`` for a folder, a device or a missing file."""
    if path.is_dir():
        raise TaskFormatError(f"{where}: is a folder, not a task file ({shown(path)})")
    if path.exists() and not path.is_file():
        raise TaskFormatError(f"{where}: not a regular file ({shown(path)})")
    if not path.is_file():
        raise TaskFormatError(f"{where}: no such file ({shown(path)})")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise TaskFormatError(
            f"{where}: {size:,} bytes; a task file holds at most {MAX_FILE_BYTES:,}"
        )
    return path.read_bytes()


def _is_header(row) -> bool:
    """A leading ``{"fmt": ...}`` object (no prompt) that declares the file's prompt format."""
    return (
        isinstance(row, dict) and "prompt" not in row and "fmt" in row and set(row) <= HEADER_KEYS
    )


def load_task(name_or_path: str | os.PathLike) -> Task:
    """A built-in task by name (``retrieval``, ...) or a user's JSONL/CSV file by path.

    A file that declares no prompt format has ``fmt == "auto"`` until the first call that takes
    it with a model measures the format (``tasks.prompt_format.task_format``), as the command
    line does.
    """
    key = str(name_or_path)
    if key in BUILTIN_TASKS + EXTRA_TASKS:
        path = data_dir() / f"{key}.jsonl"
        if not path.is_file():
            raise TaskFormatError(
                f"{path.name}: built-in task file missing; rebuild it with "
                "`python -m interp_heads.tasks.builder`"
            )
        task = read_task_file(path, name=key)
        task.meta.update(fmt=BUILTIN_FORMAT, fmt_source="built-in")
        return task
    path = Path(name_or_path)
    if not path.exists() and path.suffix == "":
        raise TaskFormatError(
            f"{path.name}: unknown task (built-in tasks: {', '.join(BUILTIN_TASKS)}; "
            "or give a .jsonl/.csv path)"
        )
    return read_task_file(path)


def dumps_example(ex: Example) -> str:
    """One JSONL line (fixed key order, UTF-8, no trailing newline)."""
    d = ex.to_dict()
    out = {k: d[k] for k in FIELDS}
    for key in ("distractors", "meta"):  # optional: written only when set
        if not out[key]:
            del out[key]
    return json.dumps(out, ensure_ascii=False)


def save_task(task: Task, path: str | os.PathLike) -> Path:
    """Write ``task`` as JSONL (fixed key order, ``\\n`` line ends, UTF-8) through the store's
    atomic writer (never through a link at ``path``); returns the path."""
    from interp_heads.store.atomic import write_atomic

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, "".join(dumps_example(ex) + "\n" for ex in task.examples))
    return path
