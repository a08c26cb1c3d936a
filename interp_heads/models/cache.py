"""The converted-weights cache of :mod:`interp_heads.models.load`.

Entries live under ``$INTERP_HEADS_CACHE`` (default ``~/.cache/interp_heads``), keyed by the
source's hash, the library versions and ``CACHE_FORMAT``. An entry holds the weights
(safetensors, with their SHA-256), the tokenizer and the ``HookedTransformerConfig``; it is written
atomically, and a truncated or corrupt entry is detected on load, removed and rebuilt.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import shutil
from pathlib import Path

import torch

from interp_heads.models.tl_compat import HookedTransformerConfig
from interp_heads.store.provenance import versions

log = logging.getLogger("interp_heads.models.load")

CACHE_FORMAT = 1


def cache_root() -> Path:
    """Root folder of the converted-weights cache (``$INTERP_HEADS_CACHE``)."""
    return Path(os.environ.get("INTERP_HEADS_CACHE", Path.home() / ".cache" / "interp_heads"))


def file_sha256(path: str | os.PathLike, chunk: int = 1 << 22) -> str:
    """Hex SHA-256 of a file, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def cache_versions() -> dict[str, str]:
    """The library versions a cache entry is keyed by (a conversion may change with any)."""
    return versions(("torch", "transformers", "transformer-lens", "gguf"))


def entry_dir(source_hash: str) -> Path:
    """The cache folder of a source's converted weights (its hash and the library versions)."""
    key = hashlib.sha256(
        json.dumps(
            {"src": source_hash, "v": cache_versions(), "fmt": CACHE_FORMAT}, sort_keys=True
        ).encode()
    ).hexdigest()[:24]
    return cache_root() / "models" / key


def cfg_to_json(cfg: HookedTransformerConfig) -> dict:
    keep = {}
    for f in dataclasses.fields(cfg):
        v = getattr(cfg, f.name)
        if isinstance(v, torch.dtype):
            v = str(v).removeprefix("torch.")
        if isinstance(v, str | int | float | bool | type(None)):
            keep[f.name] = v
    return keep


def cfg_from_json(d: dict) -> HookedTransformerConfig:
    d = dict(d)
    d["dtype"] = getattr(torch, d.get("dtype", "float32"))
    fields = {f.name for f in dataclasses.fields(HookedTransformerConfig)}
    derived = {"n_params", "d_vocab_out", "device", "n_devices"}
    return HookedTransformerConfig(
        **{k: v for k, v in d.items() if k in fields and k not in derived}
    )


def save_entry(entry: Path, cfg, state_dict, tokenizer, meta: dict) -> None:
    """Write a cache entry atomically: safetensors and the tokenizer's ``save_pretrained`` write
    into a fresh staged folder (``store.staging``: no link in it, none followed), ``meta.json``
    through the store's writer, and the folder is renamed onto ``entry`` (an old entry replaced,
    a link there removed, never written through)."""
    from safetensors.torch import save_file

    from interp_heads.store.atomic import write_atomic
    from interp_heads.store.staging import staged_folder

    entry.parent.mkdir(parents=True, exist_ok=True)
    with staged_folder(entry) as tmp:
        save_file({k: v.contiguous() for k, v in state_dict.items()}, tmp / "weights.safetensors")
        tokenizer.save_pretrained(tmp / "tokenizer")
        meta = dict(
            meta, weights_sha256=file_sha256(tmp / "weights.safetensors"), cfg=cfg_to_json(cfg)
        )
        write_atomic(tmp / "meta.json", json.dumps(meta, indent=1))


def load_entry(entry: Path):
    """Read a cache entry; returns ``(cfg, state_dict, tokenizer)`` or None if absent or corrupt."""
    from safetensors.torch import load_file
    from transformers import AutoTokenizer

    meta_path = entry / "meta.json"
    if not meta_path.is_file():
        return None
    try:
        meta = json.loads(meta_path.read_text())
        weights = entry / "weights.safetensors"
        if file_sha256(weights) != meta["weights_sha256"]:
            raise ValueError("weights checksum mismatch")
        state_dict = load_file(weights)
        tokenizer = AutoTokenizer.from_pretrained(entry / "tokenizer")
        cfg = cfg_from_json(meta["cfg"])
    except Exception as exc:  # noqa: BLE001 - any failure means: rebuild
        log.warning("cache entry %s is corrupt (%s); rebuilding", entry, exc)
        shutil.rmtree(entry, ignore_errors=True)
        return None
    return cfg, state_dict, tokenizer
