"""``ablation_ig``: integrated gradients along the path from every head's z to its mean-ablation value.

The sweep replaces a head's ``hook_z`` by its task mean ``r``. The path ``z'(alpha) = r + alpha (z -
r)``, applied at every layer's ``hook_z`` at once (``z`` is what the layer computes from the
already-interpolated layers below it), runs from the all-heads-ablated model (``alpha = 0``) to the
clean one (``alpha = 1``). Since ``alpha`` enters the computation only at those hooks,
``d f / d alpha = sum_heads g_h . (z_h - r_h)`` exactly (``g_h``: the gradient of ``f`` = log
p(answer's first token) at the hook's output), so the per-head terms, integrated over ``alpha``
with the midpoint rule (``steps`` points), sum to ``f(clean) - f(all heads ablated)``
(completeness: the unit tests check it against independent forward passes). One forward and one
backward pass per step and batch, for all heads together; ``steps=1`` at ``alpha = 1`` would be
``ablation_atp``'s first-order estimate, up to the mean's dependence on the path.

Measured against exact per-head mean ablation it ranks worse than the first-order estimate
(``docs/attribution.md``): along this path every other head is partly ablated too, so the gradients
it integrates are those of a damaged model, not of the clean model with one head replaced.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from jaxtyping import Float

from interp_heads.attribution.gradients import z_gradients
from interp_heads.attribution.inputs import Batch, answer_logprob
from interp_heads.attribution.patching import masked_z_sums, run_cached, z_hook_names
from interp_heads.models.tl_compat import HookedTransformer


def task_means(
    model: HookedTransformer, batches: Sequence[Batch]
) -> Float[torch.Tensor, "layer head_index d_head"]:
    """Each head's mean ``hook_z`` over all non-pad positions of the batches' clean prompts."""
    total, count = 0.0, 0
    for b in batches:
        cache, _ = run_cached(model, b.clean, b.mask, z_hook_names(model))
        s, c = masked_z_sums(model, cache, b.mask)
        total, count = total + s, count + c
    return total / count


def path_gradients(
    model: HookedTransformer,
    batch: Batch,
    means: Float[torch.Tensor, "layer head_index d_head"],
    alpha: float,
    per_example: list | None = None,
) -> tuple[Float[torch.Tensor, "layer head"], Float[torch.Tensor, " batch"]]:
    """``sum over examples and non-pad positions of g_h . (z_h - r_h)`` at ``alpha``, and f per
    example; ``per_example`` receives the terms of each example ``[batch layer head]``."""
    deltas: list[torch.Tensor | None] = [None] * model.cfg.n_layers

    def along_path(z, layer):
        r = means[layer].to(z.dtype)
        deltas[layer] = (z - r).detach()
        return r + alpha * (z - r)

    _, grads, values = z_gradients(
        model,
        batch.clean,
        lambda logits: answer_logprob(logits, batch),
        attention_mask=batch.mask,
        transform=along_path,
    )
    w = batch.mask.to(means.dtype)[:, :, None, None]
    terms = torch.stack(
        [(g * d * w).sum(dim=(0, 1, 3)).float().cpu() for g, d in zip(grads, deltas, strict=True)]
    )
    if per_example is not None:
        per_example.append(
            torch.stack(
                [
                    (g * d * w).sum(dim=(1, 3)).float().cpu()
                    for g, d in zip(grads, deltas, strict=True)
                ],
                dim=1,
            )
        )
    return terms, values.float().cpu()


def ablation_ig_scores(
    model: HookedTransformer,
    batches: Sequence[Batch],
    steps: int = 8,
    *,
    per_example: list | None = None,
) -> Float[torch.Tensor, "layer head"]:
    """Integrated gradients from mean ablation to clean, per head (midpoint rule, ``steps`` points).

    Positive: the head's part of the path raises log p(answer's first token), i.e. its ablation is
    estimated to lower it (the scale of ``ablation_atp`` and ``mean_ablation``). ``per_example``:
    a list that receives each example's integrated terms ``[example layer head]``.
    """
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    means = task_means(model, batches)
    total = torch.zeros(model.cfg.n_layers, model.cfg.n_heads)
    n = 0
    for b in batches:
        parts: list | None = [] if per_example is not None else None
        for i in range(steps):
            terms, _ = path_gradients(model, b, means, (i + 0.5) / steps, parts)
            total += terms / steps
        if per_example is not None:
            per_example.append(sum(parts) / steps)
        n += len(b)
    return total / n
