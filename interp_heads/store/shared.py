"""Generations shared by several runs: one file per condition, named by what decides its tokens.

The runs of a study differ in one choice each, so many of their conditions generate the same
tokens: a RandomK draw does not depend on the ranking, the unmasked answers not on the mask, and a
reference, a metric or an example filter read after generation changes none of them. A
:class:`SharedGenerations` folder (``<runs>/shared/`` for ``interp-heads study``; any folder given
as ``shared_store``) holds each condition's generations once, in
``<folder>/generations/<key>.json``, where ``key`` is :func:`interp_heads.store.resume.generation_key`
over everything that determines the tokens. A run looks a condition up before generating it and
writes what it generated, so a resumed or extended study reuses every condition it has. An
ablation kind's replacement values (a task's head means) are kept beside them, in
``<folder>/values/<key>.pt`` (torch's format, read weights-only) with ``<key>.json`` naming the
file's sha256, under :func:`~interp_heads.store.resume.values_key`, so they are averaged once too.

The key is the only thing that decides reuse: a key that missed a determinant would be a silent
wrong result, so the key's inputs are listed in ``generation_key``'s docstring and each is tested
to miss when changed. Entries are written atomically with a checksum (``store.write_entry``) and
read through ``store.read_entry`` (never through a link); a damaged, linked or mismatched entry is
a :class:`~interp_heads.store.StoreWarning` naming the file, then ignored and generated again.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import warnings
from pathlib import Path

from interp_heads.errors import PipelineError
from interp_heads.store.atomic import StoreWarning, read_entry, write_atomic, write_entry
from interp_heads.store.files import UnsafeFile, read_plain

GENERATIONS = "generations"
VALUES = "values"
SCHEMA = {"key": str, "generations": list}
VALUES_SCHEMA = {"key": str, "sha256": str}
_KEY = re.compile(r"^[0-9a-f]{32}$")


def not_a_folder(path: str | os.PathLike) -> str | None:
    """What keeps ``path`` from being a store folder ("a symbolic link", "not a folder"); None
    when it is one or is absent (it is made then)."""
    path = Path(path)
    if path.is_symlink():
        return "a symbolic link"
    return "not a folder" if path.exists() and not path.is_dir() else None


class SharedGenerations:
    """A folder of generations keyed by content (see the module docstring).

    ``hits`` and ``generated`` count the conditions read back and the conditions written here
    by this object (what :attr:`stats` reports).
    """

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self.dir = self.root / GENERATIONS
        self.values_dir = self.root / VALUES
        for path in (self.root, self.dir, self.values_dir):
            if (problem := not_a_folder(path)) is not None:
                raise PipelineError(
                    f"{str(path)!r} is {problem}; a shared generation store must be a real folder"
                )
        self.dir.mkdir(parents=True, exist_ok=True)
        self.values_dir.mkdir(exist_ok=True)
        self.hits = 0
        self.generated = 0
        self.values_read = 0

    def path(self, key: str, folder: Path | None = None, suffix: str = ".json") -> Path:
        if not _KEY.match(key):
            raise ValueError(f"not a generation key: {key!r}")
        return (folder or self.dir) / f"{key}{suffix}"

    def get(self, key: str, n_rows: int) -> list[str] | None:
        """The stored generations of ``key`` (``n_rows`` strings), else None (absent or damaged:
        a damaged entry is warned about and will be overwritten)."""
        path = self.path(key)
        entry = read_entry(path, SCHEMA)
        if entry is None:
            return None
        gens = entry["generations"]
        problem = None
        if entry["key"] != key:
            problem = "holds another key than its name"
        elif len(gens) != n_rows or not all(isinstance(g, str) for g in gens):
            problem = f"holds no list of {n_rows} generations"
        if problem:
            warnings.warn(
                f"{path}: {problem}; ignored, it will be generated again",
                StoreWarning,
                stacklevel=2,
            )
            return None
        self.hits += 1
        return gens

    def put(self, key: str, generations: list[str], about: dict | None = None) -> None:
        """Store ``generations`` under ``key`` (``about``: a readable note of what they are)."""
        payload = {"key": key, "generations": list(generations), "about": about or {}}
        write_entry(self.path(key), payload)
        self.generated += 1

    def get_values(self, key: str):
        """The replacement values stored under ``key`` (``store.resume.values_key``), else None
        (absent, or damaged: warned about). Read as torch's weights-only format, on the CPU."""
        import torch

        entry = read_entry(self.path(key, self.values_dir), VALUES_SCHEMA)
        if entry is None:
            return None
        tensors = self.path(key, self.values_dir, ".pt")
        try:
            raw = read_plain(tensors)
        except (OSError, UnsafeFile) as exc:
            warnings.warn(f"{tensors}: {exc}; ignored, recomputed", StoreWarning, stacklevel=2)
            return None
        if entry["key"] != key or hashlib.sha256(raw).hexdigest() != entry["sha256"]:
            warnings.warn(
                f"{tensors}: not the file its entry describes; ignored, recomputed",
                StoreWarning,
                stacklevel=2,
            )
            return None
        self.values_read += 1
        return torch.load(io.BytesIO(raw), map_location="cpu", weights_only=True)

    def put_values(self, key: str, values) -> None:
        """Store replacement values (tensors in dicts and lists) under ``key``: the tensors'
        file first, then the entry naming its sha256."""
        import torch

        buffer = io.BytesIO()
        torch.save(values, buffer)
        raw = buffer.getvalue()
        write_atomic(self.path(key, self.values_dir, ".pt"), raw)
        entry = {"key": key, "sha256": hashlib.sha256(raw).hexdigest()}
        write_entry(self.path(key, self.values_dir), entry)

    @property
    def stats(self) -> dict:
        return {
            "hits": self.hits,
            "generated": self.generated,
            "values_read": self.values_read,
            "folder": str(self.root),
        }


def open_shared(store: SharedGenerations | str | os.PathLike | None) -> SharedGenerations | None:
    """``store`` as a :class:`SharedGenerations` (a folder path is opened; None stays None)."""
    if store is None or isinstance(store, SharedGenerations):
        return store
    return SharedGenerations(store)
