"""One batch's KV cache during greedy generation, on any backend (``models.backends``)."""

from __future__ import annotations

import torch

from interp_heads.models.backends import backend_of


class KVCache:
    """One batch's KV cache during greedy generation; the model's backend keeps it.

    :meth:`step` takes the new tokens (the whole prompt first, then one token per row) and the
    attention mask of everything so far, and returns the last position's logits; hooks fire on
    the new positions only, ``hook_z`` included. ``prefix``: a cache the backend's
    ``prompt_prefix`` made, to start from (its positions are not read again). ``capacity``: the
    positions the batch will reach, for a backend that preallocates its cache (``hooked``).
    """

    def __init__(self, model, batch: int, prefix=None, capacity: int | None = None):
        self.model = model
        self.cache = backend_of(model).kv_cache(model, batch, prefix, capacity)

    def step(self, new_tokens, new_mask, full_mask) -> torch.Tensor:
        return self.cache.step(new_tokens, new_mask, full_mask)

    def keep(self, rows: torch.Tensor) -> bool:
        """Drop every row of the batch but ``rows`` (ascending); False: this backend's cache
        cannot, and the batch stays whole."""
        keep = getattr(self.cache, "keep", None)
        return bool(keep(rows)) if keep is not None else False
