"""Atomic writes and a verifying JSON store: what a run may resume from is complete or ignored.

Every file a run may resume from (``conditions/*.json``, ``attribution/<task>.json``,
``baseline/<task>.json``, ``conditions/config.json``) is written atomically (temporary file,
``fsync``, rename) with an embedded checksum (``_sha256``). :func:`read_entry` checks the bytes
(UTF-8, JSON, an object), the checksum and the schema; a damaged entry is reported as a
:class:`StoreWarning` naming the file, then ignored, so the caller recomputes and overwrites it.
The digests here (:func:`digest`, :func:`config_digest`) are part of stored resume keys: their
form is fixed.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import warnings
from collections.abc import Iterator
from pathlib import Path

from interp_heads.store import faults
from interp_heads.store.files import UnsafeFile, create_new, is_plain, read_plain

CHECKSUM = "_sha256"
TEMP_MARK = ".interp-heads-tmp"  # a temporary file of the tool: ``.NAME.interp-heads-tmpPID``
_TEMP = re.compile(r"^\..+" + re.escape(TEMP_MARK) + r"(\d+)$")


class StoreWarning(UserWarning):
    """A resume entry was unreadable or inconsistent (it is ignored and recomputed), or a stale lock."""


# --------------------------------------------------------------------------- atomic writes
def temp_path(path: str | os.PathLike) -> Path:
    """The temporary file beside ``path`` this process writes before renaming it onto ``path``.

    Its name (``.NAME.interp-heads-tmpPID``) says whose it is, so the clean-up of killed writes
    (:func:`temp_pid`) never mistakes a user's ``.notes.tmp123`` for one of the tool's."""
    path = Path(path)
    return path.with_name(f".{path.name}{TEMP_MARK}{os.getpid()}")


def temp_pid(name: str) -> int | None:
    """The pid of the process that made the temporary file ``name`` (:func:`temp_path`), else None."""
    m = _TEMP.match(name)
    return int(m.group(1)) if m else None


def write_atomic(path: str | os.PathLike, data: str | bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file, ``fsync`` and a rename.

    The temporary file is created new (``O_EXCL | O_NOFOLLOW``: a link planted under its name is
    removed, never written through) and renamed over ``path``'s own entry (a link at ``path`` is
    replaced by the file, its target untouched)."""
    path = Path(path)
    tmp = temp_path(path)
    try:
        with os.fdopen(create_new(tmp), "wb") as fh:
            fh.write(data.encode() if isinstance(data, str) else data)
            fh.flush()
            os.fsync(fh.fileno())
        faults.point(f"write:{path.parent.name}/{path.name}")
        _replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise _named(exc, path) from None
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def _replace(tmp: Path, path: Path) -> None:
    """Rename ``tmp`` onto ``path`` when ``tmp`` is still the plain file this process wrote."""
    if not is_plain(tmp):
        raise OSError(errno.EPERM, f"{tmp} is no longer a plain file; not renamed onto {path}")
    os.replace(tmp, path)


def _named(exc: OSError, path: Path) -> OSError:
    """``exc`` naming ``path`` (a full disk reports no file name of its own)."""
    if exc.filename is not None and str(path) in str(exc.filename):
        return exc
    return type(exc)(exc.errno, f"{exc.strerror or exc} (writing {path})") if exc.errno else exc


@contextlib.contextmanager
def atomic(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; renamed onto ``path`` when the block succeeds.

    For writers that take a path (``DataFrame.to_parquet``, ``to_csv``)::

        with atomic(out / "table.parquet") as tmp:
            frame.to_parquet(tmp)
    """
    path = Path(path)
    tmp = temp_path(path)
    try:
        os.close(create_new(tmp))  # the writer opens our own new file, not a planted link
        yield tmp
        faults.point(f"write:{path.parent.name}/{path.name}")
        _replace(tmp, path)
    except OSError as exc:
        raise _named(exc, path) from None
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


def canonical(obj) -> bytes:
    """Canonical JSON bytes of ``obj`` (sorted keys, no spaces), the input of every digest."""
    return json.dumps(
        obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    ).encode()


def digest(obj, n: int = 16) -> str:
    """Short sha256 of :func:`canonical` ``obj``."""
    return hashlib.sha256(canonical(obj)).hexdigest()[:n]


def config_digest(obj) -> str:
    """16 hex digits of sha256 over ``json.dumps(obj, sort_keys=True)``: the digest a run folder
    records for its config (manifest ``config_digest``, ``conditions/config.json``). Its form is
    fixed (not :func:`digest`'s): another form would make every existing run folder refuse to resume."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def write_entry(path: str | os.PathLike, payload: dict, indent: int | None = None) -> None:
    """Atomically write a JSON object with its checksum (``_sha256``, over :func:`canonical`) embedded."""
    body = {k: v for k, v in payload.items() if k != CHECKSUM}
    body[CHECKSUM] = digest(body, 64)
    write_atomic(path, json.dumps(body, ensure_ascii=False, indent=indent, default=str))


_legacy_warned: set[Path] = set()


def _warn(path: Path, reason: str) -> None:
    warnings.warn(f"{path}: {reason}; ignored, it will be recomputed", StoreWarning, stacklevel=3)


def read_entry(
    path: str | os.PathLike,
    schema: dict[str, type | tuple[type, ...]] | None = None,
    *,
    checksum: bool = True,
) -> dict | None:
    """The JSON object in ``path``, or None when absent or damaged (damage is warned about).

    Args:
        path: the entry.
        schema: required keys and their types, e.g. ``{"ids": list, "k": int}``.
        checksum: require and verify ``_sha256`` (entries written by :func:`write_entry`).
    """
    path = Path(path)
    try:
        raw = read_plain(path)
    except FileNotFoundError:
        return None
    except UnsafeFile as exc:
        _warn(path, str(exc).removeprefix(f"{path}: "))
        return None
    except OSError as exc:
        _warn(path, f"unreadable ({exc.strerror or exc})")
        return None
    try:
        obj = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        _warn(path, "not valid UTF-8")
        return None
    except json.JSONDecodeError as exc:
        _warn(path, f"truncated or not JSON ({exc.msg} at byte {exc.pos} of {len(raw)})")
        return None
    except RecursionError:
        _warn(path, "JSON nested too deeply")
        return None
    if not isinstance(obj, dict):
        _warn(path, f"expected a JSON object, found {type(obj).__name__}")
        return None
    if checksum:
        stored = obj.pop(CHECKSUM, None)
        if stored is None:  # an older version's entry: one warning per folder, not one per file
            older = {
                k: v for k, v in (schema or {}).items() if k != "resume_key"
            }  # older entries had none
            problem = schema_problem(obj, older)
            if problem:  # not even an older entry: name the file
                _warn(path, f"{problem}; no checksum")
            elif path.parent not in _legacy_warned:
                _legacy_warned.add(path.parent)
                warnings.warn(
                    f"{path.parent}: entries without a checksum (written by an older version or by hand) "
                    "are ignored and will be recomputed",
                    StoreWarning,
                    stacklevel=2,
                )
            return None
        if stored != digest(obj, 64):
            _warn(path, "checksum mismatch (edited or damaged)")
            return None
    problem = schema_problem(obj, schema or {})
    if problem:
        _warn(path, problem)
        return None
    return obj


def schema_problem(obj: dict, schema: dict) -> str | None:
    """What is wrong with ``obj`` against ``{key: type}`` (None when it fits)."""
    missing = [k for k in schema if k not in obj]
    if missing:
        return f"missing key(s) {', '.join(missing)}"
    for key, kind in schema.items():
        value = obj[key]
        if not isinstance(value, kind) or (isinstance(value, bool) and kind in (int, float)):
            names = "/".join(t.__name__ for t in kind) if isinstance(kind, tuple) else kind.__name__
            return f"key {key!r} is a {type(value).__name__}, expected {names}"
    return None
