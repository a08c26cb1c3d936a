"""One batch's KV cache during greedy generation, on any backend (``models.backends``)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from interp_heads.models.backends import backend_of


class KVCache:
    """One batch's KV cache during greedy generation; the model's backend keeps it.

    :meth:`step` takes the new tokens (the whole prompt first, then one token per row) and the
    attention mask of everything so far, and returns the last position's logits; hooks fire on
    the new positions only, ``hook_z`` included. ``prefix``: a cache the backend's
    ``prompt_prefix`` made, to start from (its positions are not read again); where every
    attention layer runs the fused path (``generation.fast_attention``), the backend may read it
    in place rather than copy it (``shared_prefix``). ``capacity``: the positions the batch will
    reach, for a backend that preallocates its cache (``hooked``).
    """

    def __init__(self, model, batch: int, prefix=None, capacity: int | None = None):
        from interp_heads.generation.fast_attention import fused_everywhere

        self.model = model
        shared = prefix is not None and fused_everywhere(model)
        self.cache = backend_of(model).kv_cache(
            model, batch, prefix, capacity, shared_prefix=shared
        )

    def step(self, new_tokens, new_mask, full_mask) -> torch.Tensor:
        return self.cache.step(new_tokens, new_mask, full_mask)

    def prompt_pass(self, tokens, mask) -> torch.Tensor:
        """The first step, over the whole prompts: the leading tokens every row shares read once
        and copied into every row, where the backend's cache can (``start_shared``) and the
        active hooks allow (``generation.shared_start``), else every row whole."""
        from interp_heads.generation.shared_start import split_at_lead, use_shared_start

        lead = (
            use_shared_start(self.model, tokens, mask) if hasattr(self.cache, "start_shared") else 0
        )
        if not lead:
            return self.step(tokens, mask, mask)
        pad = self.model.tokenizer.pad_token_id
        return self.cache.start_shared(*split_at_lead(tokens, mask, lead, pad))

    def keep(self, rows: torch.Tensor) -> bool:
        """Drop every row of the batch but ``rows`` (ascending); False: this backend's cache
        cannot, and the batch stays whole."""
        keep = getattr(self.cache, "keep", None)
        return bool(keep(rows)) if keep is not None else False


@dataclass(frozen=True)
class Prefix:
    """A batch's unmasked prompt pass to start generation from: ``kv``, the backend's cache of
    the prompts (``Backend.prompt_prefix``); ``logits``, None when it holds all but the last
    prompt token (read again under the mask), else the last position's logits (it holds the
    whole prompt; they give the first generated token)."""

    kv: object
    logits: torch.Tensor | None = None
