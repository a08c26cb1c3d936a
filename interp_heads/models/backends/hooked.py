"""The ``hooked`` backend: TransformerLens 2.18's ``HookedTransformer`` with converted weights.

Loads the embedded SmolLM2 (its GGUF de-quantised and converted once, then cached), a local
Hugging Face folder or ``.gguf`` file of a registered family (``models.families``), or a
TransformerLens official model name. The forward ends in TransformerLens' own unembedding and
KV cache; a cache entry can be *frozen*, so exact patching hands it the shared prompt prefix.
Generation uses a preallocated cache written in place (``static_kv``).
"""

from __future__ import annotations

import logging
from pathlib import Path

from interp_heads.model_info import set_source
from interp_heads.models.backends.base import BACKENDS, Backend, prefix_copies

log = logging.getLogger(__name__)


@BACKENDS.register
class HookedBackend(Backend):
    """HookedTransformer (TransformerLens 2.18, the default environment)."""

    name = "hooked"
    frozen_prefix = True

    def check_available(self) -> None:
        from interp_heads.models.tl_compat import HAS_HOOKED, no_hooked

        if not HAS_HOOKED:
            raise no_hooked("backend 'hooked'")

    def owns(self, model) -> bool:
        from interp_heads.models.tl_compat import HAS_HOOKED, HookedTransformer

        return HAS_HOOKED and isinstance(model, HookedTransformer)

    # ----------------------------------------------------------------------------- loading
    def load(self, spec, device, dtype, *, use_cache=True, n_devices=1):
        from interp_heads.models.names import unknown_model
        from interp_heads.models.sources import EMBEDDED, embedded_gguf_path, is_embedded
        from interp_heads.models.tl_compat import get_official_model_name

        if is_embedded(spec):
            model = _load_local(embedded_gguf_path(), device, dtype, use_cache, n_devices)
            set_source(model, spec=EMBEDDED)
            return model
        path = Path(spec).expanduser()
        if path.exists():
            return _load_local(path, device, dtype, use_cache, n_devices)
        try:
            official = get_official_model_name(spec)
        except ValueError:
            raise unknown_model(spec) from None
        from interp_heads.models.official import load_official

        model = load_official(official, device, dtype, n_devices)
        set_source(model, spec=official, sha256=None)
        return model

    def check_name(self, spec):
        """Only TransformerLens' official names (read from its source, not imported)."""
        from interp_heads.models.names import official_names, unknown_model

        names = official_names()
        if names is not None and spec.lower() not in names:
            raise unknown_model(spec)

    def tiny(self, device=None):
        """``models.tiny.tiny_model()``: random TransformerLens weights (built on the CPU, then
        moved, so they do not depend on the device)."""
        from interp_heads.models.tiny import tiny_model

        model = tiny_model()
        if device is not None:
            model.to(device, print_details=False)
        set_source(model, spec="tiny", sha256=None)
        return model

    # ----------------------------------------------------------------------------- running
    def final_logits(self, model, resid):
        """Final norm and unembedding of the last position only (unembedding every prompt
        position costs about a fifth of a SmolLM2 forward pass); the config's output soft cap
        (Gemma 2) is applied as TransformerLens does."""
        import torch

        x = resid[:, -1:, :]
        if model.cfg.normalization_type is not None:
            x = model.ln_final(x)
        logits = model.unembed(x)[:, 0]
        cap = getattr(model.cfg, "output_logits_soft_cap", 0.0)
        if cap and cap > 0:
            logits = cap * torch.tanh(logits / cap)
        return logits

    def kv_cache(self, model, batch, prefix=None, capacity=None, *, shared_prefix=False):
        return _HookedCache(self, model, batch, prefix, capacity, shared_prefix)

    def prompt_pass(self, model, tokens, mask, pieces=None):
        """One unhooked pass over a left-padded batch. ``pieces``: lists of its rows to pass
        apart (``generation.decode.prefill_groups``: rows of about one length, since the pass
        is compute-bound and a padding position costs what a token costs); their caches are
        stacked back into the batch's rows and width (``static_kv.stacked``), so the decode
        steps that follow run on the whole batch. A piece of rows with no token here (one-token
        prompts whose last token is read later) is one column of padding."""
        import torch

        from interp_heads.models.backends.static_kv import stacked

        if pieces is None or len(pieces) == 1:
            return self._one_pass(model, tokens, mask)
        parts, logits = [], None
        for piece in pieces:
            rows = torch.tensor(piece, device=tokens.device)
            width = max(1, int(mask[rows].sum(dim=1).max()))
            kv, out = self._one_pass(model, tokens[rows, -width:], mask[rows, -width:])
            if logits is None:
                logits = out.new_empty((tokens.shape[0], out.shape[1]))
            logits[rows] = out
            parts.append((rows, kv))
        return stacked(parts, tokens.shape[0], tokens.shape[1]), logits

    def _one_pass(self, model, tokens, mask):
        cache = _HookedCache(self, model, tokens.shape[0], capacity=tokens.shape[1])
        logits = cache.step(tokens, mask, mask)
        return cache.cache, logits

    def text_tokens(self, model, text):
        toks = model.to_tokens(text, prepend_bos=False, move_to_device=False)[0]
        return [int(t) for t in toks]

    # ----------------------------------------------------------------------------- patching
    def prefix_cache(self, model, layer, acts, start_pos, copies):
        from interp_heads.models.tl_compat import HookedTransformerKeyValueCacheEntry as Entry

        kv = [None] * model.cfg.n_layers
        for i in range(layer, model.cfg.n_layers):
            k = _cache_keys(model, i, acts[f"blocks.{i}.attn.hook_k"][:, :start_pos])
            v = acts[f"blocks.{i}.attn.hook_v"][:, :start_pos]
            kv[i] = Entry(k.repeat(copies, 1, 1, 1), v.repeat(copies, 1, 1, 1), frozen=True)
        return kv

    def caching_hooks(self, names, keep):
        """One filter over every hook point; ``hook.name`` is the name asked for."""
        return [(lambda n: n in names, lambda x, hook: keep(x, hook.name))]


class _HookedCache:
    """One batch's preallocated KV cache (``static_kv.StaticCache``); each step runs the new
    positions only. ``capacity``: positions to allocate (the prompt plus the answer budget)."""

    def __init__(
        self, backend: HookedBackend, model, batch: int, prefix=None, capacity=None, shared=False
    ):
        from interp_heads.models.backends.shared_prefix import SharedPrefixCache
        from interp_heads.models.backends.static_kv import StaticCache

        self.backend, self.model = backend, model
        capacity = capacity or 0  # unknown: the buffers grow by doubling
        self.capacity = capacity
        if prefix is None:
            self.cache = StaticCache.empty(model.cfg, model.cfg.device, batch, capacity)
        else:  # the prefix is never written: read in place (its attention runs the fused
            # path) or copied once into this batch's own buffers; a batch of several conditions
            # over one prefix holds its rows once per condition
            copies = prefix_copies(batch, prefix.batch)
            rotary = model.cfg.positional_embedding_type == "rotary"
            if shared and SharedPrefixCache.fits(prefix, rotary):  # read in place, not copied
                self.cache = SharedPrefixCache(prefix, capacity, copies)
            else:
                self.cache = prefix.copy_of(capacity, copies)

    def step(self, new_tokens, new_mask, full_mask):
        resid = self.model(
            new_tokens,
            attention_mask=new_mask,
            past_kv_cache=self.cache,
            stop_at_layer=self.model.cfg.n_layers,
        )
        return self.backend.final_logits(self.model, resid)

    def start_shared(self, lead, rest, rest_mask):
        """The first step when every row starts with the tokens ``lead`` (``[1, n]``): they run
        once, their cache is copied into every row, then each row's own tokens (``rest``,
        left-padded, ``rest_mask``) run from it; the last position's logits. Each row then
        holds the shared tokens, a gap of padding and its own, and positions are counted from
        the attention mask (``generation.shared_start``)."""
        import torch

        one, _ = self.backend._one_pass(self.model, lead, torch.ones_like(lead))
        width = lead.shape[1] + rest.shape[1]
        self.cache = one.copy_of(max(self.capacity, width), copies=rest.shape[0])
        return self.step(rest, rest_mask, None)

    def keep(self, rows) -> bool:
        """Keep only ``rows`` of the batch (ascending); later steps compute those rows only."""
        self.cache.keep(rows)
        return True


def _cache_keys(model, layer: int, k):
    """Keys as TransformerLens' KV cache holds them: ``hook_k`` fires before the q/k norm of
    families that have one (Qwen3, Gemma 3), the cache stores them after it."""
    attn = model.blocks[layer].attn
    if model.cfg.use_qk_norm:
        return attn._apply_qk_norm(k, attn.k_norm)
    return k


def _load_local(path: Path, device, dtype, use_cache: bool, n_devices: int = 1):
    """A local ``.gguf`` file or HF folder, converted (or read from the converted-weights cache)."""
    from interp_heads.models.cache import entry_dir, file_sha256, load_entry, save_entry
    from interp_heads.models.convert import (
        ModelLoadError,
        build_hooked,
        convert_checkpoint,
        prepare_tokenizer,
    )
    from interp_heads.models.sources import folder_sha256

    if not path.is_file() and not path.is_dir():
        raise ModelLoadError(
            f"{path} is neither a model folder nor a regular file (a device, FIFO or socket); "
            "pass a model folder or a .gguf file"
        )
    if path.is_file():
        if path.suffix != ".gguf":
            raise ModelLoadError(
                f"{path} is a file but not a .gguf; pass a .gguf or a model folder"
            )
        source_dir, gguf_file, digest = path.parent, path.name, file_sha256(path)
    else:
        source_dir, gguf_file, digest = path, None, folder_sha256(path)
    entry = entry_dir(f"{digest}:{dtype}")
    cached = load_entry(entry) if use_cache else None
    if cached is None:
        cfg, state_dict, tokenizer = convert_checkpoint(source_dir, gguf_file, dtype)
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
    set_source(model, spec=str(path), sha256=digest)
    return model
