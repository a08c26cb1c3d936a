"""Each head's mean ``z``: the replacement values of the ``mean``, ``resample`` and
``position_mean`` ablation kinds."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from jaxtyping import Float

from interp_heads.heads import hook_z
from interp_heads.models.tl_compat import HookedTransformer

HeadValues = dict[int, Float[torch.Tensor, "head_index d_head"]]


@torch.inference_mode()
def head_means(
    model: HookedTransformer,
    prompts: Sequence[str],
    *,
    batch_size: int = 32,
    per_prompt: bool = False,
    batch_padding: int | None = None,
) -> HeadValues | list[HeadValues]:
    """Mean ``z`` per layer and head over all non-pad positions of ``prompts``.

    Returns ``{layer: [n_heads, d_head]}``; with ``per_prompt=True`` one such dict per prompt.
    Prompts go ``batch_size`` a batch in their order; with ``batch_padding``, sorted by length
    and cut as a sweep's batches are (``generation.decode.batches``), so long and short prompts
    are not all padded to the longest (the same means up to the order of the float sums).
    """
    from interp_heads.generation.checks import positive_int
    from interp_heads.generation.decode import batches

    positive_int(batch_size, "batch_size")
    names = [hook_z(layer) for layer in range(model.cfg.n_layers)]
    sums: dict[int, torch.Tensor] = {}
    count = 0
    per: list[HeadValues] = [{} for _ in prompts] if per_prompt else []
    for idx, tokens, mask in batches(
        model, list(prompts), batch_size, None, batch_padding, in_order=batch_padding is None
    ):
        tokens, mask = tokens.to(model.cfg.device), mask.to(model.cfg.device)
        _, cache = model.run_with_cache(
            tokens, attention_mask=mask, names_filter=lambda n: n in names, return_type=None
        )
        w = mask.to(model.cfg.dtype)[:, :, None, None]
        for layer in range(model.cfg.n_layers):
            z = cache[names[layer]] * w  # [batch pos head d_head]
            if per_prompt:
                for b, i in enumerate(idx):
                    per[i][layer] = (z[b].sum(0) / w[b].sum().clamp(min=1)).cpu()
            total = z.sum(dim=(0, 1))
            sums[layer] = sums[layer] + total if layer in sums else total
        count += int(mask.sum())
    if per_prompt:
        return per
    return {layer: (s / count).cpu() for layer, s in sums.items()}


@torch.inference_mode()
def position_means(
    model: HookedTransformer,
    prompts: Sequence[str],
    *,
    batch_size: int = 32,
    batch_padding: int | None = None,
) -> dict[int, Float[torch.Tensor, "from_end head_index d_head"]]:
    """Mean ``z`` per layer, head and position counted from the end of each prompt.

    Returns ``{layer: [n_from_end, n_heads, d_head]}``: row 0 is the mean over the prompts' last
    tokens, row j over the tokens j before it, among the prompts that have one (``n_from_end``:
    the longest prompt's length). Unlike :func:`head_means`, which pools every position, this keeps
    the positional structure a replacement by one pooled mean erases. Batched as in
    :func:`head_means`.
    """
    from interp_heads.generation.checks import positive_int
    from interp_heads.generation.decode import batches

    positive_int(batch_size, "batch_size")
    names = [hook_z(layer) for layer in range(model.cfg.n_layers)]
    sums: dict[int, torch.Tensor] = {}
    counts = torch.zeros(0)
    for _, tokens, mask in batches(
        model, list(prompts), batch_size, None, batch_padding, in_order=batch_padding is None
    ):
        tokens, mask = tokens.to(model.cfg.device), mask.to(model.cfg.device)
        _, cache = model.run_with_cache(
            tokens, attention_mask=mask, names_filter=lambda n: n in names, return_type=None
        )
        w = mask.flip(1).to(model.cfg.dtype)  # left padding: column j is j tokens from the end
        counts = _grown(counts, w.shape[1]) + _grown(w.sum(0).float().cpu(), len(counts))
        for layer in range(model.cfg.n_layers):
            part = (cache[names[layer]].flip(1) * w[:, :, None, None]).sum(0).float().cpu()
            sums[layer] = _grown(sums.get(layer, part[:0]), len(part)) + _grown(part, len(counts))
    return {
        layer: (s / counts.clamp(min=1)[:, None, None]).to(model.cfg.dtype)
        for layer, s in sums.items()
    }


def _grown(t: torch.Tensor, n: int) -> torch.Tensor:
    """``t`` with zero rows appended up to ``n`` rows (as it is when it has that many)."""
    if len(t) >= n:
        return t
    return torch.cat([t, t.new_zeros((n - len(t), *t.shape[1:]))])
