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
are :func:`~interp_heads.generation.decode.batches`', the ones ``generate_tokens`` makes. Each
backend keeps its own kind of cache (``Backend.prompt_pass``: the hooked backend's static cache,
the bridge's Hugging Face cache); a backend that cannot start a cache from a prefix
(``prompt_pass`` returns None) generates as before.

:func:`shared_prefixes` keeps them per model while memory allows, so one prompt pass serves
every reader of a batch of prompts: the probe's answers at position ``generated``, the unmasked
reference answers and every masked condition of the sweep (``execution.base.TaskContext``).
"""

from __future__ import annotations

import hashlib
import weakref
from collections import OrderedDict
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
        from interp_heads.generation.decode import attention_path, batches, prefill_groups

        if hooks_active(model):
            raise RuntimeError(
                "PromptPrefixes runs the unmasked model: build it before a mask or hook is added"
            )
        backend = backend_of(model)
        self._kv: dict[str, Prefix] = {}
        self.nbytes = 0  # of the caches kept (keys and values)
        device = model.cfg.device
        cut = None if whole else -1
        with torch.inference_mode(), attention_path(model, fast_attention):
            for _, tokens, mask in batches(
                model, list(prompts), batch_size, prepend_bos, batch_padding
            ):
                if tokens.shape[1] < 2 and not whole:
                    continue
                tokens, mask = tokens.to(device), mask.to(device)
                pieces = prefill_groups(mask[:, :cut].sum(dim=1).tolist(), device)
                made = backend.prompt_pass(model, tokens[:, :cut], mask[:, :cut], pieces)
                if made is None:
                    return
                kv, logits = made
                self._kv[batch_key(tokens, mask)] = Prefix(kv, logits if whole else None)
                self.nbytes += _cache_bytes(model, tokens[:, :cut].numel())

    def __len__(self) -> int:
        return len(self._kv)

    def get(self, tokens: torch.Tensor, mask: torch.Tensor) -> Prefix | None:
        """The prefix of this batch (``tokens``, ``mask``: the whole prompts), or None."""
        return self._kv.get(batch_key(tokens, mask)) if self._kv else None


def _cache_bytes(model, positions: int) -> int:
    """Bytes of the keys and values of ``positions`` (rows x tokens) over every layer."""
    cfg = model.cfg
    n_kv = getattr(cfg, "n_key_value_heads", None) or cfg.n_heads
    dtype = getattr(cfg, "dtype", None) or torch.float32
    size = torch.finfo(dtype).bits // 8 if dtype.is_floating_point else 4
    return 2 * cfg.n_layers * n_kv * cfg.d_head * positions * size


SHARE_FRACTION = 0.25  # of the free memory the kept prefixes of one model may take
_SHARED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> OrderedDict


def shared_prefixes(
    model,
    prompts: Sequence[str],
    *,
    batch_size: int,
    whole: bool = False,
    batch_padding: int | None = None,
) -> PromptPrefixes:
    """The :class:`PromptPrefixes` of ``prompts`` in these batches, made once and kept for the
    next reader while the model's kept prefixes fit in ``SHARE_FRACTION`` of the free memory
    (the least recently used leave first). Call it with no hook active, as ``PromptPrefixes``.
    :func:`release_prefixes` frees them (a run does when it ends)."""
    from interp_heads.models.devices import free_bytes

    h = hashlib.sha256()
    for p in prompts:
        h.update(p.encode())
        h.update(b"\0")
    key = (h.hexdigest(), batch_size, batch_padding, whole)
    kept = _SHARED.setdefault(model, OrderedDict())
    if key in kept:
        kept.move_to_end(key)
        return kept[key]
    made = PromptPrefixes(
        model, prompts, batch_size=batch_size, whole=whole, batch_padding=batch_padding
    )
    kept[key] = made
    free = free_bytes(model.cfg.device) or 0
    budget = SHARE_FRACTION * (free + sum(p.nbytes for p in kept.values()))
    while kept and sum(p.nbytes for p in kept.values()) > budget:
        kept.popitem(last=False)
    return made


def release_prefixes(model) -> None:
    """Forget the prompt passes :func:`shared_prefixes` kept for ``model``."""
    _SHARED.pop(model, None)
