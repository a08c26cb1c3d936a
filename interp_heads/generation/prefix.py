"""The unmasked prompt prefix, run once per batch and reused by every mask that leaves it alone.

A mask at the last position of each forward pass only (``positions = "last"``) leaves every
earlier prompt position unmasked: there the keys and values are the unmasked model's in every
condition of a sweep. A mask at the generated positions only (``positions = "generated"``, the
Cognitive Mirrors study's scope) leaves the whole prompt unmasked, and the first generated token
with it. :class:`PromptPrefixes` runs each batch's prompts once, with no hook active, and keeps
the KV cache: of all prompt tokens but the last (``whole=False``), or of the whole prompt and its
last position's logits (``whole=True``). ``generate_tokens(..., prefixes=...)`` starts each batch
from it, so a condition reads the last prompt token and its answer, or its answer only, instead
of the whole prompt (the study's prompts are about 350 tokens, its answers about 20). The batches
are :func:`~interp_heads.generation.decode.batches`', the ones ``generate_tokens`` makes. A
backend that cannot start a cache from a prefix (``Backend.prompt_pass`` returns None:
``bridge``) generates as before.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import torch

from interp_heads.generation.kv_cache import Prefix
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
    """Each batch's KV cache of its prompts without their last token (``whole``: of the whole
    prompts, with their last logits), from an unhooked pass."""

    def __init__(
        self,
        model,
        prompts: Sequence[str],
        *,
        batch_size: int = 32,
        prepend_bos: bool | None = None,
        fast_attention: bool | None = None,
        whole: bool = False,
        batch_padding: int | None = None,
    ):
        from interp_heads.generation.decode import attention_path, batches

        if hooks_active(model):
            raise RuntimeError(
                "PromptPrefixes runs the unmasked model: build it before a mask or hook is added"
            )
        backend = backend_of(model)
        self._kv: dict[str, Prefix] = {}
        device = model.cfg.device
        cut = None if whole else -1
        with torch.inference_mode(), attention_path(model, fast_attention):
            for _, tokens, mask in batches(
                model, list(prompts), batch_size, prepend_bos, batch_padding
            ):
                if tokens.shape[1] < 2 and not whole:
                    continue
                tokens, mask = tokens.to(device), mask.to(device)
                made = backend.prompt_pass(model, tokens[:, :cut], mask[:, :cut])
                if made is None:
                    return
                kv, logits = made
                self._kv[batch_key(tokens, mask)] = Prefix(kv, logits if whole else None)

    def __len__(self) -> int:
        return len(self._kv)

    def get(self, tokens: torch.Tensor, mask: torch.Tensor) -> Prefix | None:
        """The prefix of this batch (``tokens``, ``mask``: the whole prompts), or None."""
        return self._kv.get(batch_key(tokens, mask)) if self._kv else None
