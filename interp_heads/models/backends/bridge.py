"""The ``bridge`` backend: TransformerLens 4's ``TransformerBridge`` around the Hugging Face model.

Runs in the tl4 environment (``make setup-tl4``). The model is booted offline with
``TransformerBridge.boot_transformers(folder, hf_model=..., tokenizer=...)`` (eager attention)
from a local HF folder, a ``.gguf`` file (de-quantised by transformers) or the embedded SmolLM2;
one device. ``hook_z`` holds the per-query-head values ``[batch, pos, head_index, d_head]`` as on
the hooked backend. What differs, and lives here:

- a forward with ``stop_at_layer=n_layers`` already returns the (soft-capped) logits;
- the KV cache is Hugging Face's own (``past_key_values=``, ``return_type="logits_and_cache"``);
  a TransformerLens cache (``past_kv_cache=``) would be silently ignored, so it is refused. A
  prompt prefix (``prompt_pass``) is that cache after an unhooked pass; each generation from it
  starts a cache of its own over the same key and value tensors (:func:`_fork`: Hugging Face's
  dynamic layers replace their tensors when they grow, never write them), repeated for copies;
  rows that stop leave the batch (``batch_select_indices``);
- HF's cache takes no frozen prefix, so exact patching recomputes the shared prompt prefix;
- ``hook_z`` is an alias there (a hook's ``hook.name`` is the canonical name), so activations are
  cached by the name asked for (the base class's per-name hooks);
- a forward from a residual input gets its positions from the attention mask;
- the bridge's copy of the tokenizer puts BOS before any text, so a text's own tokens are asked
  of the tokenizer without special tokens.
"""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

from interp_heads.model_info import set_source
from interp_heads.models.backends.base import BACKENDS, Backend, prefix_copies
from interp_heads.models.families import BRIDGE_FAMILIES

_TINY_FOLDERS: dict[int, Path] = {}  # the tiny model's checkpoint, saved once per process


@BACKENDS.register
class BridgeBackend(Backend):
    """TransformerBridge (TransformerLens 4, the tl4 environment)."""

    name = "bridge"
    frozen_prefix = False
    families = BRIDGE_FAMILIES  # the HF architectures it has been checked on

    def check_available(self) -> None:
        from interp_heads.models.tl_compat import HAS_BRIDGE, no_bridge

        if not HAS_BRIDGE:
            raise no_bridge()

    def owns(self, model) -> bool:
        from interp_heads.models.tl_compat import HAS_BRIDGE, TransformerBridge

        return HAS_BRIDGE and isinstance(model, TransformerBridge)

    # ----------------------------------------------------------------------------- loading
    def load(self, spec, device, dtype, *, use_cache=True, n_devices=1):
        """The embedded model, a local HF folder or a local ``.gguf`` file, on one device (no
        converted-weights cache: the HF model is used as it is)."""
        from interp_heads.models.cache import file_sha256
        from interp_heads.models.convert import ModelLoadError
        from interp_heads.models.sources import (
            EMBEDDED,
            embedded_gguf_path,
            folder_sha256,
            is_embedded,
        )

        embedded = is_embedded(spec)
        path = embedded_gguf_path() if embedded else Path(spec).expanduser()
        if not (path.is_dir() or (path.is_file() and path.suffix == ".gguf")):
            raise ModelLoadError(
                f"backend 'bridge' loads {EMBEDDED!r}, a local Hugging Face model folder or a "
                f".gguf file; {spec!r} is none of these (official names load with backend = "
                "'hooked')"
            )
        if n_devices > 1:
            raise ModelLoadError("backend 'bridge' runs on one device here; use backend = 'hooked'")
        if path.is_dir():
            model, digest = load_bridge(path, device, dtype), folder_sha256(path)
        else:
            model = load_bridge(path.parent, device, dtype, gguf_file=path.name)
            digest = file_sha256(path)
        spec = EMBEDDED if embedded else str(path)
        set_source(model, spec=spec, sha256=digest, backend=self.name)
        return model

    def tiny(self, device=None):
        """The tiny model's shapes as a random Llama checkpoint (TransformerLens 4 has no
        HookedTransformer): ``models.tiny.tiny_llama_checkpoint``, saved once per process."""
        import torch

        model = self.load(str(tiny_checkpoint()), device or "cpu", torch.float32, use_cache=False)
        set_source(model, spec="tiny", sha256=None, backend=self.name)
        return model

    # ----------------------------------------------------------------------------- running
    def final_logits(self, model, resid):
        return resid[:, -1]

    def kv_cache(self, model, batch, prefix=None, capacity=None, *, shared_prefix=False):
        if prefix is None:
            return _HFCache(model)
        return _HFCache(model, _fork(prefix, prefix_copies(batch, _rows(prefix))))

    def prompt_pass(self, model, tokens, mask, pieces=None):
        """Hugging Face's cache after one unhooked pass over ``tokens``, and the last logits;
        None where a layer's cache is not of a kind :func:`_fork` knows to share."""
        cache = _HFCache(model)
        logits = cache.step(tokens, mask, mask)
        return (cache.cache, logits) if _forkable(cache.cache) else None

    def text_tokens(self, model, text):
        return list(model.tokenizer(text, add_special_tokens=False)["input_ids"])

    # ----------------------------------------------------------------------------- patching
    def resid_input_kwargs(self, attention_mask):
        """Positions from the attention mask: the bridge derives none from a residual input."""
        if attention_mask is None:
            return {}
        return {"position_ids": (attention_mask.cumsum(-1) - 1).clamp(min=0)}


class _HFCache:
    """Hugging Face's KV cache of one batch, grown by each step (from ``cache``: a fork of a
    prompt prefix)."""

    def __init__(self, model, cache=None):
        self.model, self.cache = model, cache

    def step(self, new_tokens, new_mask, full_mask):
        logits, self.cache = self.model(
            new_tokens,
            attention_mask=full_mask,
            past_key_values=self.cache,
            return_type="logits_and_cache",
            use_cache=True,  # the first step too: without it the prompt's keys are not kept
        )
        return logits[:, -1]

    def keep(self, rows) -> bool:
        """Keep only ``rows`` of the batch; later steps compute those rows only."""
        if self.cache is None:
            return False
        self.cache.batch_select_indices(rows)
        return True


def _forkable(cache) -> bool:
    """Whether every layer of Hugging Face's ``cache`` grows by replacing its tensors (dynamic
    layers, sliding or not), so that forks can share them."""
    from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer

    layers = getattr(cache, "layers", None)
    kinds = (DynamicLayer, DynamicSlidingWindowLayer)
    return bool(layers) and all(type(layer) in kinds for layer in layers)


def _rows(cache) -> int:
    """The batch rows of a prompt prefix's cache."""
    return next(layer.keys.shape[0] for layer in cache.layers if layer.is_initialized)


def _fork(cache, copies: int = 1):
    """A cache of its own over ``cache``'s key and value tensors (``copies`` times, copy-major):
    its layers are new objects, so its growth leaves ``cache`` as it is."""
    import copy

    forked = copy.copy(cache)
    forked.layers = [copy.copy(layer) for layer in cache.layers]
    if copies > 1:
        for layer in forked.layers:
            if layer.is_initialized:
                layer.keys = layer.keys.repeat(copies, 1, 1, 1)
                layer.values = layer.values.repeat(copies, 1, 1, 1)
    return forked


def tiny_checkpoint(seed: int = 0) -> Path:
    """The folder of the tiny model's random Llama checkpoint, saved once per process and seed."""
    from interp_heads.models.tiny import tiny_llama_checkpoint

    if seed not in _TINY_FOLDERS or not _TINY_FOLDERS[seed].is_dir():
        _TINY_FOLDERS[seed] = tiny_llama_checkpoint(tempfile.mkdtemp(prefix="tiny_llama_"), seed)
    return _TINY_FOLDERS[seed]


def _refuse_tl_cache(forward):
    """The bridge's forward, refusing a TransformerLens KV cache it would silently ignore."""
    from interp_heads.models.tl_compat import BackendError

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


def load_bridge(folder: Path, device: str, dtype, gguf_file: str | None = None):
    """A TransformerBridge around the Hugging Face model saved in ``folder`` (or in its
    ``gguf_file``, de-quantised by transformers), booted offline."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from interp_heads.models.convert import ModelLoadError, attach_tokenizer, prepare_tokenizer
    from interp_heads.models.families import FAMILIES, FamilyError, family_of
    from interp_heads.models.tl_compat import BRIDGE_ENV, HOOKED_ENV, TransformerBridge

    BridgeBackend().check_available()
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
