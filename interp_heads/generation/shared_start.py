"""Leading prompt tokens that every row of a batch shares, read once for the whole batch.

A chat template's system prompt, a task's fixed instructions: when every prompt of a batch starts
with the same tokens, their keys and values are the same in every row, as long as each forward
pass treats every row and every pass alike (no hook, or only masks at every position with one
replacement per head: ``models.alike``). Positions are counted from the attention mask, so a
row's own tokens may follow the shared ones after a gap of padding. ``generate_tokens`` then runs
the shared tokens once (one row), copies their cache into every row, and runs the rest of each
prompt from it: the same keys, values and logits as one pass over the whole prompts, for a
fraction of the work when the shared part is long (the Cognitive Mirrors format shares its first
66 of about 363 tokens).

Only where TransformerLens' positions and masks allow it (:func:`model_allows`): rotary or learned
absolute positions, and no sliding-window layer (a window counts buffer columns, which the gap of
padding would widen).
"""

from __future__ import annotations

import torch

from interp_heads.models.alike import only_alike_hooks

# fewer shared tokens than this are read with the rest (one more pass costs more than it saves)
SHARED_START_MIN = 8


def model_allows(model) -> bool:
    """Whether positions and masks follow the attention mask alone (see the module)."""
    cfg = model.cfg
    local = cfg.use_local_attn or cfg.window_size is not None or "local" in (cfg.attn_types or [])
    return cfg.positional_embedding_type in ("rotary", "standard") and not local


def shared_lead(tokens: torch.Tensor, mask: torch.Tensor) -> int:
    """How many first real tokens all rows of a left-padded batch share, leaving every row at
    least one token of its own (its last logits come from its own pass)."""
    lengths = mask.sum(dim=1)
    m = int(lengths.min())
    if len(tokens) < 2 or m < 2:
        return 0
    starts = tokens.shape[1] - lengths
    heads = tokens.gather(1, starts[:, None] + torch.arange(m - 1, device=tokens.device))
    same = (heads == heads[:1]).all(dim=0)
    return int(same.long().cumprod(dim=0).sum())


def split_at_lead(tokens: torch.Tensor, mask: torch.Tensor, lead: int, pad: int):
    """``(lead_tokens [1, lead], rest [batch, width - lead], rest_mask)``: the shared tokens once,
    and each row's own tokens left-padded (right-aligned, as in the batch)."""
    row0 = tokens[0, tokens.shape[1] - int(mask[0].sum()) :]
    rest_mask = mask[:, : tokens.shape[1] - lead]
    rest = torch.where(rest_mask.bool(), tokens[:, lead:], pad)
    return row0[None, :lead], rest, rest_mask


def use_shared_start(model, tokens: torch.Tensor, mask: torch.Tensor) -> int:
    """The shared lead to read once for this batch, or 0 (too short, hooks that may tell rows or
    passes apart, a model whose positions or windows do not allow it)."""
    if not model_allows(model) or not only_alike_hooks(model):
        return 0
    lead = shared_lead(tokens, mask)
    return lead if lead >= SHARED_START_MIN else 0
