"""The logits of a forward pass at its last position: final norm, unembedding, soft-capping."""

from __future__ import annotations

import torch

from interp_heads.models.backends import backend_of
from interp_heads.models.tl_compat import HookedTransformer


def final_logits(model: HookedTransformer, resid: torch.Tensor) -> torch.Tensor:
    """Logits ``[batch, d_vocab]`` at the last position, from the output of a forward with
    ``stop_at_layer=n_layers`` (the model's backend, ``models.backends``, knows what that is).

    Unembedding every prompt position costs about a fifth of a SmolLM2 forward pass (49k-token
    vocabulary); Hugging Face's ``generate`` skips it too. Hooks on ``ln_final`` still fire; the
    config's output soft cap (Gemma 2) is applied as TransformerLens does.
    """
    return backend_of(model).final_logits(model, resid)


def last_logits(
    model: HookedTransformer, tokens, attention_mask, past_kv_cache=None
) -> torch.Tensor:
    """Logits ``[batch, d_vocab]`` at the last position of a forward pass (hooks active)."""
    resid = model(
        tokens,
        attention_mask=attention_mask,
        past_kv_cache=past_kv_cache,
        stop_at_layer=model.cfg.n_layers,
    )
    return final_logits(model, resid)
