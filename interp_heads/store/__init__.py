"""Run-folder safety: atomic writes, a verifying JSON store, and a single-writer lock.

The pieces live in :mod:`interp_heads.store.atomic` (atomic writes, checksummed resume entries, the
digests of resume keys) and :mod:`interp_heads.store.locks` (one writer per run folder); this module
names them together, as the rest of the package and the tests import them.
"""

from __future__ import annotations

from interp_heads.store.atomic import (
    CHECKSUM,
    StoreWarning,
    atomic,
    canonical,
    config_digest,
    digest,
    read_entry,
    schema_problem,
    temp_path,
    temp_pid,
    write_atomic,
    write_entry,
)
from interp_heads.store.locks import (
    LOCK_NAME,
    RunFolderBusy,
    acquire,
    drop,
    held_locks,
    holds,
    pid_alive,
    release,
    releases_locks,
)

__all__ = [
    "CHECKSUM",
    "LOCK_NAME",
    "RunFolderBusy",
    "StoreWarning",
    "pid_alive",
    "acquire",
    "drop",
    "atomic",
    "canonical",
    "config_digest",
    "digest",
    "held_locks",
    "holds",
    "read_entry",
    "release",
    "releases_locks",
    "schema_problem",
    "temp_path",
    "temp_pid",
    "write_atomic",
    "write_entry",
]
