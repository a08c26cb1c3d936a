"""``lookahead = d``: each head's mean ablation run exactly through d blocks, the rest to first order.

The first-order estimate of ``ablation_atp`` linearises everything between a head's ``hook_z`` and
the answer's log-prob. Its errors come from the non-linear computation right after the head (the
next layers' attention patterns and MLPs react to the replaced output), so here the replacement is
run exactly through blocks ``l .. l+d-1`` for a head of layer ``l`` (all heads of a layer in one
batched forward, as ``patch_heads``), and only the change of the residual stream at
``blocks.{l+d}.hook_resid_pre`` is taken to first order, with the gradient of log p(answer's first
token) there (one backward pass per batch for every layer). Heads of the last ``d`` layers get their
exact drop. ``d = n_layers`` is exact mean ablation; a single block costs about
``n_heads x d`` layer-forwards per layer, against ``n_heads x (n_layers - l)`` for the exact drop.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import torch
from jaxtyping import Float

from interp_heads.attribution.gradients import row_gradients
from interp_heads.attribution.inputs import Batch, answer_logprob, final_logits, frozen_params
from interp_heads.attribution.patching import patched_resid
from interp_heads.attribution.paths import task_means
from interp_heads.attribution.softmax_atp import rival_objective, softmax_drop
from interp_heads.models.tl_compat import HookedTransformer


def resid_gradients(
    model: HookedTransformer, b: Batch, objective
) -> tuple[list, list, torch.Tensor]:
    """One forward pass and a backward pass per objective row: each layer's ``hook_resid_pre``
    ``[batch pos d_model]``, the gradients of ``objective(last-position logits)`` (``[batch]`` or
    ``[n_objectives, batch]``, summed over the batch) w.r.t. it (``[n_objectives batch pos
    d_model]``), and the final residual stream."""
    n_layers = model.cfg.n_layers
    resids: list[torch.Tensor | None] = [None] * n_layers

    def keep(x, hook, layer):
        if layer == 0:  # nothing upstream needs a gradient: start the graph here
            x = x.detach().requires_grad_(True)
        resids[layer] = x
        return x

    hooks = [
        (f"blocks.{i}.hook_resid_pre", lambda x, hook, i=i: keep(x, hook, i))
        for i in range(n_layers)
    ]
    with torch.enable_grad(), frozen_params(model), model.hooks(fwd_hooks=hooks):
        final = model(b.clean, attention_mask=b.mask, stop_at_layer=n_layers)
        grads = row_gradients(objective(final_logits(model, final)), resids)
    return [r.detach() for r in resids], grads, final.detach()


@torch.no_grad()
def lookahead_scores(
    model: HookedTransformer,
    batches: Sequence[Batch],
    depth: int,
    *,
    rivals: int = 0,
    max_rows: int = 128,
    per_example: list | None = None,
) -> Float[torch.Tensor, "layer head"]:
    """Estimated drop of log p(answer's first token) when each head's ``hook_z`` is replaced by its
    task mean: exact through ``depth`` blocks from the head's own, first order after that (with
    ``rivals``: first order in the logits of the answer, its rivals and the rest of the
    vocabulary, log-softmax exact, as ``softmax_atp``).

    Same scale and sign as ``ablation_atp`` and ``mean_ablation_scores(objective="logprob")``.
    ``per_example``: a list that receives each example's drop ``[example layer head]``.
    """
    if depth < 1:
        raise ValueError(f"lookahead must be at least 1 block, got {depth}")
    means = task_means(model, batches)
    every = torch.cat([_batch_drops(model, b, means, depth, rivals, max_rows) for b in batches])
    if per_example is not None:
        per_example.append(every)
    return every.mean(0)


def _batch_drops(model, b: Batch, means, depth: int, rivals: int, max_rows: int) -> torch.Tensor:
    """``[batch, layer, head]`` estimated drops for one batch (see :func:`lookahead_scores`)."""
    n_layers, n_heads = model.cfg.n_layers, model.cfg.n_heads
    chosen: list[torch.Tensor] = []
    objective = rival_objective(b, rivals, chosen) if rivals else partial(answer_logprob, batch=b)
    resids, grads, final = resid_gradients(model, b, objective)
    linear = _Linearised(resids, grads, chosen[0] if rivals else None)
    base = answer_logprob(final_logits(model, final), b)
    drop = torch.zeros(len(b), n_layers, n_heads)
    src_shape = (*b.clean.shape, n_heads, model.cfg.d_head)
    per_pass = max(1, max_rows // len(b))
    for layer in range(n_layers):
        stop = min(layer + depth, n_layers)
        src = means[layer].expand(src_shape)
        for c in range(0, n_heads, per_pass):
            hs = list(range(c, min(c + per_pass, n_heads)))
            out = patched_resid(model, layer, hs, src, resids[layer], b.mask, stop=stop)
            if stop == n_layers:  # ran to the end: the exact drop
                logits = final_logits(model, out).view(len(hs), len(b), -1)
                d = base[None] - answer_logprob(logits, b)
            else:
                d = linear.drop(stop, out.view(len(hs), *resids[layer].shape))
            drop[:, layer, hs] = d.T.float().cpu()
    return drop


@dataclass
class _Linearised:
    """The objectives to first order in the residual stream at each layer, around the clean run."""

    resids: list[torch.Tensor]  # per layer [batch pos d_model]
    grads: list[torch.Tensor]  # per layer [n_objectives batch pos d_model]
    probs: torch.Tensor | None  # with rivals: clean p of answer and rivals [batch, 1 + rivals]

    def drop(self, layer: int, out: torch.Tensor) -> torch.Tensor:
        """``[heads, batch]`` estimated drops from patched residuals ``out`` ``[heads batch pos
        d_model]`` at ``layer``."""
        delta = out - self.resids[layer][None]
        change = torch.einsum("hbpd,obpd->boh", delta.float(), self.grads[layer].float())
        if self.probs is None:
            return -change[:, 0].T
        return softmax_drop(change[:, :, None].double(), self.probs.double())[:, 0].T.float()
