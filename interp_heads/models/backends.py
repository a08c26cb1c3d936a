"""One model interface, two backends: ``hooked`` (HookedTransformer) and ``bridge`` (TransformerBridge).

What the toolkit needs from a model is the same on both: hook names (``blocks.{l}.attn.hook_z``
holds the per-query-head values ``[batch, pos, head_index, d_head]`` on both), shape facts from
``model.cfg`` (``n_layers``, ``n_heads``, ``d_head``, ``d_vocab``, ``device``, ``dtype``, and
:func:`n_kv_heads`), a tokenizer with left padding, a forward with hooks (``model.hooks``), a
KV-cached generation step that fires ``hook_z`` on every new token
(:class:`interp_heads.generation.kv_cache.KVCache`) and an
identity (``interp_heads_source`` with its ``backend``, read by ``store.resume.model_fingerprint``).

The hooked backend (TransformerLens 2.18, the default environment) holds converted weights
(:mod:`interp_heads.models.load`). The bridge backend (TransformerLens 4, ``make setup-tl4``) wraps the
Hugging Face model itself, booted offline with ``TransformerBridge.boot_transformers(folder,
hf_model=..., tokenizer=...)``; its KV cache is Hugging Face's own (``past_key_values=``,
``return_type="logits_and_cache"``). A TransformerLens cache passed to the bridge
(``past_kv_cache=``) would be silently ignored, so it is refused (:class:`BackendError`).
"""

from __future__ import annotations

import functools
from pathlib import Path

import torch

from interp_heads.models.families import BRIDGE_FAMILIES
from interp_heads.models.tl_compat import (
    HAS_BRIDGE,
    BackendError,
    TransformerBridge,
)

BACKENDS = ("hooked", "bridge")


def backend_of(model) -> str:
    """``"bridge"`` for a TransformerBridge, else ``"hooked"``."""
    return "bridge" if HAS_BRIDGE and isinstance(model, TransformerBridge) else "hooked"


def n_kv_heads(model) -> int:
    """Key/value heads per layer (``n_heads`` without grouped-query attention)."""
    return getattr(model.cfg, "n_key_value_heads", None) or model.cfg.n_heads


def check_backend(backend: str) -> str:
    """``backend`` if it is one of :data:`BACKENDS`; one-line error otherwise."""
    if backend not in BACKENDS:
        raise BackendError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    return backend


def _refuse_tl_cache(forward):
    """The bridge's forward, refusing a TransformerLens KV cache it would silently ignore."""

    @functools.wraps(forward)
    def guarded(*args, **kwargs):
        if kwargs.get("past_kv_cache") is not None:
            raise BackendError(
                "the bridge backend ignores a TransformerLens KV cache (past_kv_cache=); pass "
                "Hugging Face's cache as past_key_values= (interp_heads.generation.kv_cache.KVCache)"
            )
        kwargs.pop("past_kv_cache", None)
        return forward(*args, **kwargs)

    return guarded


def _hf_architecture(hf_config) -> str:
    """The config's model class; a GGUF's config names only its model type (``"llama"``), which
    transformers' own causal-LM table maps to the class."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    named = (getattr(hf_config, "architectures", None) or [""])[0]
    return named or MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.get(
        hf_config.model_type, hf_config.model_type
    )


def load_bridge(folder: Path, device: str, dtype: torch.dtype, gguf_file: str | None = None):
    """A TransformerBridge around the Hugging Face model saved in ``folder`` (or in its
    ``gguf_file``, de-quantised by transformers), booted offline."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from interp_heads.models.convert import ModelLoadError, attach_tokenizer, prepare_tokenizer
    from interp_heads.models.families import FAMILIES, FamilyError, family_of
    from interp_heads.models.tl_compat import BRIDGE_ENV, HOOKED_ENV, no_bridge

    if not HAS_BRIDGE:
        raise no_bridge()
    where = str(folder)
    kw = {"local_files_only": True, **({"gguf_file": gguf_file} if gguf_file else {})}
    hf_config = AutoConfig.from_pretrained(where, **kw)
    arch = _hf_architecture(hf_config)
    if arch not in BRIDGE_FAMILIES:
        hint = f"; the hooked backend serves it ({HOOKED_ENV})" if arch in FAMILIES else ""
        raise ModelLoadError(f"architecture {arch!r} is not served by the bridge backend{hint}")
    try:
        hf_model = AutoModelForCausalLM.from_pretrained(
            where, dtype=dtype, attn_implementation="eager", **kw
        ).eval()
        tokenizer = prepare_tokenizer(AutoTokenizer.from_pretrained(where, **kw), arch)
        model = TransformerBridge.boot_transformers(
            where, hf_model=hf_model, tokenizer=tokenizer, device=device, dtype=dtype
        )
    except Exception as exc:  # noqa: BLE001
        msg = (
            f"cannot load {folder / (gguf_file or '')} on the bridge backend ({BRIDGE_ENV}): {exc}"
        )
        raise ModelLoadError(msg.splitlines()[0]) from exc
    try:  # the same BOS convention as the hooked backend (ChatML models start with <|im_start|>)
        prepend = family_of(hf_config).config(hf_config).get("default_prepend_bos", True)
    except FamilyError:
        prepend = model.cfg.default_prepend_bos
    model.cfg.default_prepend_bos = prepend
    model.forward = _refuse_tl_cache(model.forward)
    model.eval()
    attach_tokenizer(model, tokenizer)
    # the bridge keeps its own copy of the tokenizer, set up to prepend BOS: ask that one
    model.cfg.tokenizer_prepends_bos = prepends_bos(model.tokenizer)
    # setting the tokenizer sets d_vocab to its length; the logits have the unembedding's rows
    # (more when the vocabulary is padded, as in Qwen2, Phi-3 or Pythia)
    rows = int(hf_model.get_output_embeddings().weight.shape[0])
    model.cfg.d_vocab = model.cfg.d_vocab_out = rows
    return model


def prepends_bos(tokenizer) -> bool:
    """Whether the tokenizer puts BOS before a text. The bridge's copy of the tokenizer does so
    for a text but not for ``""``, so ``encode("")`` (what ``models.convert.attach_tokenizer`` asks)
    cannot tell; without this, ``to_tokens(prepend_bos=False)`` keeps the BOS and every answer's
    "first token" is BOS."""
    ids = tokenizer("a")["input_ids"]
    return bool(ids) and tokenizer.bos_token_id is not None and ids[0] == tokenizer.bos_token_id
