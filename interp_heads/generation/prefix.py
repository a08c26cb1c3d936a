"""The unmasked prompt prefix, run once per batch and reused by every last-position mask.

A mask at the last position of each forward pass only (``positions = "last"``, the Cognitive
Mirrors study's scope) leaves every earlier prompt position unmasked: there the keys and values
are the unmasked model's in every condition of a sweep. :class:`PromptPrefixes` runs each batch's
prompts but their last token once, with no hook active, and keeps the KV cache;
``generate_tokens(..., prefixes=...)`` starts each batch from it, so a condition reads the last
prompt token and its answer instead of the whole prompt (the study's prompts are about 350
tokens, its answers about 20). The batches are :func:`~interp_heads.generation.decode.batches`',
the ones ``generate_tokens`` makes. A backend that cannot start a cache from a prefix
(``Backend.prompt_prefix`` returns None: ``bridge``) generates as before.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import torch

from interp_heads.models.backends import backend_of


def hooks_active(model) -> bool:
    """Whether any hook point of ``model`` has a forward hook (a mask, a cache, a patch)."""
    return any(hp._forward_hooks for hp in model.hook_dict.values())


def batch_key(tokens: torch.Tensor, mask: torch.Tensor) -> str:
    """A batch's identity: its tokens and padding."""
    h = hashlib.sha256(tokens.cpu().numpy().tobytes())
    h.update(mask.cpu().numpy().tobytes())
    return h.hexdigest()


class PromptPrefixes:
    """Each batch's KV cache of its prompts without their last token, from an unhooked pass."""

    def __init__(
        self,
        model,
        prompts: Sequence[str],
        *,
        batch_size: int = 32,
        prepend_bos: bool | None = None,
        fast_attention: bool | None = None,
    ):
        from interp_heads.generation.decode import attention_path, batches

        if hooks_active(model):
            raise RuntimeError(
                "PromptPrefixes runs the unmasked model: build it before a mask or hook is added"
            )
        backend = backend_of(model)
        self._kv: dict[str, object] = {}
        device = model.cfg.device
        with torch.inference_mode(), attention_path(model, fast_attention):
            for _, tokens, mask in batches(model, list(prompts), batch_size, prepend_bos):
                if tokens.shape[1] < 2:
                    continue
                tokens, mask = tokens.to(device), mask.to(device)
                prefix = backend.prompt_prefix(model, tokens[:, :-1], mask[:, :-1])
                if prefix is None:
                    return
                self._kv[batch_key(tokens, mask)] = prefix

    def __len__(self) -> int:
        return len(self._kv)

    def get(self, tokens: torch.Tensor, mask: torch.Tensor):
        """The prefix of this batch (``tokens``, ``mask``: the whole prompts), or None."""
        return self._kv.get(batch_key(tokens, mask)) if self._kv else None
