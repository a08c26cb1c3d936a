"""``ablation_atp`` with ``rivals``: first-order logits, exact log-softmax.

Plain ``ablation_atp`` linearises log p(answer) in ``z``. Where the model is confident the
softmax saturates (d log p / d logits = onehot - p is near 0 when p is near 1), so a head whose
ablation moves the logits a lot can get a score near 0 or of the wrong sign: on the math task the
head with the largest exact drop (1.22) was estimated at -0.03 (``docs/attribution.md``).

Here each head's ablation is linearised one step earlier, in the logits: for the answer and its
``rivals`` strongest competitors (top clean logits), and for the probability-weighted mean logit
of the rest of the vocabulary (from the gradient of log-sum-exp). The log-softmax over those is
then taken exactly, per example::

    drop = -(dl_a - log(sum_T p_t exp(dl_t) + P_rest exp(s_rest)))

with ``T`` = answer + rivals, ``p`` the clean probabilities, ``P_rest = 1 - sum_T p_t`` and
``s_rest = (sum_all p_j dl_j - sum_T p_t dl_t) / P_rest``. With every vocabulary token a rival it
is the exact drop of the linearised-logit model; to first order it equals plain ``ablation_atp``.
Cost: one forward and ``rivals + 2`` backward passes per batch, for all heads at once.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from jaxtyping import Float

from interp_heads.attribution.gradients import z_gradients
from interp_heads.attribution.inputs import Batch
from interp_heads.interventions.kinds import linear_kind
from interp_heads.models.tl_compat import HookedTransformer

REST_MIN = 1e-4  # below this share of probability the rest of the vocabulary is linearised


def ablation_softmax_scores(
    model: HookedTransformer,
    batches: Sequence[Batch],
    kind: str = "mean",
    *,
    rivals: int = 1,
    seed: int = 0,
    per_example: list | None = None,
) -> Float[torch.Tensor, "layer head"]:
    """Mean over examples of the drop of log p(answer's first token) when a head is ablated.

    ``kind`` and ``seed`` as in :func:`~interp_heads.attribution.gradients.ablation_atp_scores`;
    ``rivals >= 1``: how many competing tokens get their own linearised logit. ``per_example``:
    a list that receives the drops of every example, ``[example, layer, head]``.
    """
    ablation = linear_kind(kind)
    if rivals < 1 or rivals >= model.cfg.d_vocab:
        raise ValueError(f"rivals must be in 1..{model.cfg.d_vocab - 1}, got {rivals}")
    parts = [_batch_terms(model, b, rivals) for b in batches]
    g = torch.cat([p[0] for p in parts])  # [example objective layer head d_head]: sum_pos grad
    gz = torch.cat([p[1] for p in parts])  # [example objective layer head]: sum_pos grad . z
    z_sum = torch.cat([p[2] for p in parts])  # [example layer head d_head]: sum_pos z
    counts = torch.cat([p[3] for p in parts])  # [example]: non-pad positions
    probs = torch.cat([p[4] for p in parts])  # [example 1 + rivals]: clean p of answer, rivals
    replacement = ablation.linear_baseline(z_sum, counts, seed)  # [example or 1, layer head d_head]
    delta = (g * replacement[:, None]).sum(-1) - gz  # linearised change of each objective
    drops = softmax_drop(delta.double(), probs.double()).float()
    if per_example is not None:
        per_example.append(drops)
    return drops.mean(0)


def _batch_terms(model: HookedTransformer, b: Batch, rivals: int):
    """Per example: gradient sums of the answer's, the rivals' logits and log-sum-exp."""
    chosen: list[torch.Tensor] = []
    objective = rival_objective(b, rivals, chosen)
    zs, grads, _ = z_gradients(model, b.clean, objective, attention_mask=b.mask)
    w = b.mask.to(zs[0].dtype)[:, :, None, None]
    g = torch.stack([(gr * w).sum(2) for gr in grads], dim=2)  # [obj batch layer head d_head]
    gz = torch.stack([(gr * z * w).sum((2, 4)) for z, gr in zip(zs, grads, strict=True)], dim=2)
    z_sum = torch.stack([(z * w).sum(1) for z in zs], dim=1)
    counts = b.mask.sum(1)
    return (
        g.transpose(0, 1).float().cpu(),
        gz.transpose(0, 1).float().cpu(),
        z_sum.float().cpu(),
        counts.cpu(),
        chosen[0].cpu(),
    )


def rival_objective(b: Batch, rivals: int, chosen: list):
    """``logits [batch, d_vocab] -> [1 + rivals + 1, batch]``: the logits of the answer and its
    ``rivals`` strongest competitors, then log-sum-exp (whose gradient is the probability-weighted
    logit change). Appends the clean probabilities of answer and rivals ``[batch, 1 + rivals]``
    to ``chosen``."""

    def objective(logits: torch.Tensor) -> torch.Tensor:
        logits = logits.float()
        others = logits.detach().scatter(1, b.answer[:, None], float("-inf"))
        tokens = torch.cat([b.answer[:, None], others.topk(rivals, dim=1).indices], dim=1)
        chosen.append(logits.detach().log_softmax(-1).gather(1, tokens).exp())
        return torch.cat([logits.gather(1, tokens).T, logits.logsumexp(-1)[None]])

    return objective


def softmax_drop(delta: torch.Tensor, probs: torch.Tensor) -> torch.Tensor:
    """``-(change of log p(answer))`` per example and head, exact log-softmax over the blocks.

    ``delta``: ``[example, 1 + rivals + 1, layer, head]`` (answer, rivals, then the probability-
    weighted logit change of the whole vocabulary); ``probs``: ``[example, 1 + rivals]``.
    """
    d_tokens, d_all = delta[:, :-1], delta[:, -1]
    p = probs[:, :, None, None]
    p_rest = (1 - probs.sum(1))[:, None, None].expand_as(d_all)
    rest_sum = d_all - (p * d_tokens).sum(1)  # sum over the rest of p_j dl_j
    # a rest too small to carry a reliable mean shift is kept to first order: P (1 + s) = P + sum
    big = p_rest > REST_MIN
    rest = torch.where(
        big,
        p_rest * (rest_sum / p_rest.clamp(min=REST_MIN)).clamp(-50, 50).exp(),
        (p_rest + rest_sum).clamp(min=0),
    )
    d_lse = ((p * d_tokens.exp()).sum(1) + rest).log()
    return -(d_tokens[:, 0] - d_lse)
