"""One batch's KV cache during greedy generation, on either backend (``models.backends``)."""

from __future__ import annotations

import torch

from interp_heads.generation.logits import last_logits
from interp_heads.models.backends import backend_of
from interp_heads.models.tl_compat import HookedTransformerKeyValueCache


class KVCache:
    """One batch's KV cache during greedy generation, on either backend.

    :meth:`step` takes the new tokens (the whole prompt first, then one token per row) and the
    attention mask of everything so far, and returns the last position's logits; hooks fire on
    the new positions only, ``hook_z`` included.
    """

    def __init__(self, model, batch: int):
        self.model = model
        self.bridge = backend_of(model) == "bridge"
        self.hf_cache = None
        if not self.bridge:
            self.tl_cache = HookedTransformerKeyValueCache.init_cache(
                model.cfg, model.cfg.device, batch
            )

    def step(self, new_tokens, new_mask, full_mask) -> torch.Tensor:
        if not self.bridge:
            return last_logits(self.model, new_tokens, new_mask, self.tl_cache)
        logits, self.hf_cache = self.model(
            new_tokens,
            attention_mask=full_mask,
            past_key_values=self.hf_cache,
            return_type="logits_and_cache",
            use_cache=True,  # the first step too: without it the prompt's keys are not kept
        )
        return logits[:, -1]
