"""Gradient attributions on ``hook_z``: ``atp``, ``gradxact`` and ``headmask``.

All three take activation gradients only: parameters are frozen (``requires_grad=False``) for the
backward pass and restored afterwards, and hooks are removed even when something raises.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from jaxtyping import Float, Int

from interp_heads.attribution.inputs import (
    Batch,
    answer_logprob,
    final_logits,
    frozen_params,
    logit_diff,
)
from interp_heads.attribution.patching import logit_diff_denominator, run_cached, z_hook_names
from interp_heads.heads import hook_z
from interp_heads.interventions.kinds import linear_kind
from interp_heads.models.tl_compat import HookedTransformer

Objective = Callable[
    [torch.Tensor], torch.Tensor
]  # last-position logits [batch, d_vocab] -> [batch]


@dataclass
class ZPass:
    """One forward pass of ``objective`` with each layer's ``hook_z`` in the graph: the values
    now, their gradients on demand (:meth:`gradients`), so a caller that only needs the values
    skips the backward pass. The graph is held until the pass is dropped."""

    zs: list[torch.Tensor]  # per layer hook_z [batch pos head_index d_head], in the graph
    wrt: list[torch.Tensor]  # what the gradients are taken w.r.t. (zs, or the head masks)
    values: torch.Tensor  # the objective per example ([batch] or [n_objectives, batch])

    @property
    def z(self) -> list[torch.Tensor]:
        """Each layer's ``hook_z``, detached."""
        return [z.detach() for z in self.zs]

    def gradients(self) -> list[torch.Tensor]:
        """The backward pass: per layer the gradient of the summed objective w.r.t. ``wrt``
        (a leading ``n_objectives`` axis when the objective returns several rows)."""
        stacked = row_gradients(self.values, self.wrt)
        return [g[0] for g in stacked] if self.values.dim() == 1 else stacked


def z_forward(
    model: HookedTransformer,
    tokens: Int[torch.Tensor, "batch pos"],
    objective: Objective,
    *,
    attention_mask: Int[torch.Tensor, "batch pos"] | None = None,
    head_mask: bool = False,
    transform: Callable[[torch.Tensor, int], torch.Tensor] | None = None,
    graph: bool = True,
) -> ZPass:
    """The forward half of :func:`z_gradients` (same arguments): the pass, its backward not yet
    taken; ``graph=False``: the values only (no graph, so no :meth:`ZPass.gradients`)."""
    n_layers, n_heads = model.cfg.n_layers, model.cfg.n_heads
    batch = tokens.shape[0]
    zs: list[torch.Tensor | None] = [None] * n_layers
    masks = [
        torch.ones(batch, n_heads, device=tokens.device, requires_grad=True)
        for _ in range(n_layers)
    ]

    def hook(z, hook):
        layer = hook.layer()
        if head_mask:
            zs[layer] = z.detach()
            return z * masks[layer][:, None, :, None].to(z.dtype)
        if transform is not None:
            z = transform(z, layer)
        if not z.requires_grad:  # layer 0: nothing upstream needs a gradient
            z = z.detach().requires_grad_(True)
        zs[layer] = z
        return z

    with (
        torch.enable_grad() if graph else torch.no_grad(),
        frozen_params(model),
        model.hooks(fwd_hooks=[(lambda n: n.endswith("attn.hook_z"), hook)]),
    ):
        resid = model(tokens, attention_mask=attention_mask, stop_at_layer=n_layers)
        values = objective(final_logits(model, resid))
    return ZPass(zs, masks if head_mask else zs, values)


def z_gradients(
    model: HookedTransformer,
    tokens: Int[torch.Tensor, "batch pos"],
    objective: Objective,
    *,
    attention_mask: Int[torch.Tensor, "batch pos"] | None = None,
    head_mask: bool = False,
    transform: Callable[[torch.Tensor, int], torch.Tensor] | None = None,
) -> tuple[list[torch.Tensor], list[torch.Tensor], torch.Tensor]:
    """One forward and one backward pass of ``objective(...).sum()``.

    ``transform(z, layer)`` replaces each layer's ``hook_z`` output (e.g. a point on a path to the
    ablation value); the gradients are then taken w.r.t. the transformed values.

    An ``objective`` that returns ``[n_objectives, batch]`` gets one backward pass per objective
    over the one forward pass; each layer's gradient then has a leading ``n_objectives`` axis.

    Returns:
        ``(z, grads, values)``: per layer the ``hook_z`` activations ``[batch pos head_index
        d_head]`` and the gradients of the summed objective w.r.t. them (or, with ``head_mask``,
        w.r.t. a multiplicative mask ``[batch head_index]`` on ``hook_z`` at mask = 1), and the
        objective per example.
    """
    run = z_forward(model, tokens, objective, attention_mask=attention_mask,
                    head_mask=head_mask, transform=transform)  # fmt: skip
    grads = run.gradients()
    return run.z, grads, run.values.detach()


def row_gradients(values: torch.Tensor, wrt: list[torch.Tensor]) -> list[torch.Tensor]:
    """One backward pass per row of ``values`` (``[batch]``: one row; ``[n_rows, batch]``), each
    row summed over the batch: per input of ``wrt`` its gradients ``[n_rows, *input.shape]``, an
    unused input's as zeros and NaN/inf replaced (``torch.nan_to_num``)."""
    rows = values[None] if values.dim() == 1 else values
    per_row = [
        _filled(torch.autograd.grad(row.sum(), wrt, allow_unused=True, retain_graph=True), wrt)
        for row in rows
    ]
    return [torch.stack(g) for g in zip(*per_row, strict=True)]


def _filled(grads, wrt) -> list[torch.Tensor]:
    """Gradients with unused inputs as zeros and NaN/inf replaced (``torch.nan_to_num``)."""
    return [
        torch.zeros_like(w) if g is None else torch.nan_to_num(g)
        for g, w in zip(grads, wrt, strict=True)
    ]


def atp_scores(
    model: HookedTransformer, batches: Sequence[Batch], *, per_example: list | None = None
) -> Float[torch.Tensor, "layer head"]:
    """Attribution patching: grad of the metric on the corrupted run x (clean z - corrupted z).

    Summed over positions and ``d_head``; a first-order estimate of :func:`exact_scores` on the
    same normalised logit-difference scale (2 forwards + 1 backward per batch for all heads).
    ``per_example``: a list that receives each example's term ``[example layer head]`` (their
    mean is the score), for split-half stability.
    """
    total = torch.zeros(model.cfg.n_layers, model.cfg.n_heads)
    ld_clean = ld_corr = 0.0
    n, rows = 0, []
    for b in batches:
        clean_z, clean_logits = run_cached(model, b.clean, b.mask, z_hook_names(model))
        ld_clean += float(logit_diff(clean_logits, b).sum())
        zs, grads, vals = z_gradients(
            model, b.corrupted, lambda lg, b=b: logit_diff(lg, b), attention_mask=b.mask
        )
        ld_corr += float(vals.sum())
        terms = (
            (clean_z[hook_z(layer)] - z) * g
            for layer, (z, g) in enumerate(zip(zs, grads, strict=True))
        )
        _accumulate(total, terms, rows if per_example is not None else None)
        n += len(b)
    ld_clean, ld_corr = ld_clean / n, ld_corr / n
    den = logit_diff_denominator(ld_clean, ld_corr)
    if per_example is not None:
        per_example.append(torch.cat(rows) / den)
    return total / n / den


def _accumulate(total: torch.Tensor, terms, rows: list | None) -> None:
    """Add each layer's ``[batch pos head_index d_head]`` term, summed over batch, pos and d_head,
    to ``total[layer]``; with ``rows``, also append the per-example sums ``[batch layer head]``."""
    per = []
    for layer, t in enumerate(terms):
        total[layer] += t.sum(dim=(0, 1, 3)).float().cpu()
        if rows is not None:
            per.append(t.sum(dim=(1, 3)).float().cpu())
    if rows is not None:
        rows.append(torch.stack(per, dim=1))


def gradxact_scores(
    model: HookedTransformer, batches: Sequence[Batch], *, per_example: list | None = None
) -> Float[torch.Tensor, "layer head"]:
    """Gradient x activation on clean prompts: mean over examples of sum(z * d log p(answer) / dz).

    The objective is the log-probability of the answer's *first* token at the last prompt
    position. Positive: the head raises that probability (zero-ablating it would lower it by
    about this much, to first order). Needs no corrupted prompt. ``per_example``: as in
    :func:`atp_scores`.
    """
    total = torch.zeros(model.cfg.n_layers, model.cfg.n_heads)
    n = 0
    for b in batches:
        zs, grads, _ = z_gradients(
            model, b.clean, lambda lg, b=b: answer_logprob(lg, b), attention_mask=b.mask
        )
        _accumulate(total, (z * g for z, g in zip(zs, grads, strict=True)), per_example)
        n += len(b)
    return total / n


def headmask_scores(
    model: HookedTransformer, batches: Sequence[Batch], *, per_example: list | None = None
) -> Float[torch.Tensor, "layer head"]:
    """Head importance of Michel et al. (2019): E_x |dL/dmask_h| at mask = 1.

    ``L`` is the loss -log p(answer's first token); the mask multiplies each head's ``hook_z``.
    Per-example absolute gradients are averaged over examples (Michel et al.'s expectation: their
    sum up to 1/N). Always >= 0; no per-layer normalisation. ``per_example``: as in
    :func:`atp_scores`.
    """
    total = torch.zeros(model.cfg.n_layers, model.cfg.n_heads)
    n = 0
    for b in batches:
        _, grads, _ = z_gradients(
            model,
            b.clean,
            lambda lg, b=b: -answer_logprob(lg, b),
            attention_mask=b.mask,
            head_mask=True,
        )
        for layer, g in enumerate(grads):
            total[layer] += g.abs().sum(0).float().cpu()
        if per_example is not None:
            per_example.append(torch.stack([g.abs().float().cpu() for g in grads], dim=1))
        n += len(b)
    return total / n


def ablation_atp_scores(
    model: HookedTransformer,
    batches: Sequence[Batch],
    kind: str = "mean",
    *,
    seed: int = 0,
    per_example: list | None = None,
) -> Float[torch.Tensor, "layer head"]:
    """Attribution patching against the ablation baseline: no corrupted prompts needed.

    Estimates, to first order, the drop of log p(answer's first token) when a head's ``hook_z`` is
    replaced as the sweep replaces it: ``score = E_x sum_pos grad . (z - replacement)``, with the
    replacement of ablation ``kind``: ``zero`` (0: this is ``gradxact``), ``mean`` (the head's mean
    over all non-pad positions of these examples, as ``interventions.means.head_means``) or ``resample`` (the
    per-prompt mean of another example, a seeded derangement). Positive: ablating the head lowers
    the answer's probability. One forward and one backward pass per batch for all heads: since the
    estimate is linear in the replacement, ``sum_pos grad`` and ``sum_pos grad . z`` are accumulated
    and the task mean is applied once at the end. ``per_example``: as in :func:`atp_scores` (each
    example's term against the same replacement).
    """
    ablation = linear_kind(kind)
    n_layers, n_heads = model.cfg.n_layers, model.cfg.n_heads
    gz = torch.zeros(n_layers, n_heads)  # sum over examples of sum_pos grad . z
    g_sums: list[torch.Tensor] = []  # per example: sum_pos grad [layer head d_head]
    z_sums: list[torch.Tensor] = []  # per example: sum_pos z over non-pad positions
    counts: list[int] = []
    gz_rows: list[torch.Tensor] = []  # per example: sum_pos grad . z [example layer head]
    for b in batches:
        zs, grads, _ = z_gradients(
            model, b.clean, lambda lg, b=b: answer_logprob(lg, b), attention_mask=b.mask
        )
        w = b.mask.to(zs[0].dtype)[:, :, None, None]
        terms = (z * g * w for z, g in zip(zs, grads, strict=True))
        _accumulate(gz, terms, gz_rows if per_example is not None else None)
        g_sums.append(torch.stack([(g * w).sum(1) for g in grads], dim=1).float().cpu())
        z_sums.append(torch.stack([(z * w).sum(1) for z in zs], dim=1).float().cpu())
        counts.extend(b.mask.sum(1).tolist())
    n = len(counts)
    g_all, z_all = torch.cat(g_sums), torch.cat(z_sums)  # [example layer head d_head]
    replacement = ablation.linear_baseline(z_all, torch.tensor(counts), seed)
    if per_example is not None:
        per_example.append(torch.cat(gz_rows) - (g_all * replacement).sum(-1))
    if len(replacement) == 1:  # one replacement for every example (zero, mean)
        return (gz - (g_all.sum(0) * replacement[0]).sum(-1)) / n
    return (gz - (g_all * replacement).sum(dim=(0, 3))) / n
