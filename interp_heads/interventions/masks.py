"""Head masking on ``blocks.{l}.attn.hook_z``, per query head, during any forward or generation.

``hook_z`` holds each query head's attention-weighted values before the output projection, so
editing ``z[:, :, h]`` removes exactly head ``h``'s contribution. Under grouped-query attention
several query heads share a key/value head; masking at ``hook_z`` (not at K/V, not after ``W_O``)
still touches only the chosen query heads.

Ablation kinds (each a registered class in ``interventions.kinds`` that owns its rewrite of ``z``):
    ``zero``: ``z = 0``.
    ``mean``: ``z`` = the head's mean over a reference set of prompts (all non-pad positions).
    ``resample``: ``z`` = the head's mean over the positions of one reference prompt drawn at
        random (seeded) per head: a noisier, example-specific replacement.
    ``scale``: ``z = scale_factor * z`` (default ``1e-4``), the mask of the Cognitive Mirrors study
        (Ma et al., NeurIPS 2025), which multiplies the head's ``o_proj`` input.

Mask positions (``positions``):
    ``all``: every position of every forward pass. The replacement does not depend on the
        position, so masked generation with the KV cache equals masked generation without it.
    ``last``: only position -1 of each forward pass, as the Cognitive Mirrors code does. Under the
        KV cache that is the last prompt token, then every generated token; without the cache each
        step recomputes the whole sequence and masks only its last token, so the two differ.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import torch

from interp_heads.heads import Head, hook_z, parse_heads
from interp_heads.interventions.kinds import Ablation, Rewrite, get_kind
from interp_heads.interventions.means import HeadValues
from interp_heads.models.tl_compat import HookedTransformer
from interp_heads.vocab import SCALE_FACTOR, MaskPositions


class MaskNotFiring(UserWarning):
    """A mask was entered and left without its hooks ever running."""


def rewrites(
    heads: Sequence[Head],
    kind: Ablation,
    values: HeadValues | list[HeadValues] | None,
    seed: int,
) -> dict[int, tuple[list[int], Rewrite]]:
    """``{layer: (masked heads, their rewrite)}`` of ``kind`` (``interventions.kinds``)."""
    by_layer: dict[int, list[int]] = defaultdict(list)
    for layer, head in heads:
        by_layer[layer].append(head)
    gen = torch.Generator().manual_seed(seed)
    out: dict[int, tuple[list[int], Rewrite]] = {}
    for layer, hs in by_layer.items():
        hs = sorted(set(hs))
        out[layer] = (hs, kind.rewrite(layer, hs, values, gen))
    return out


@contextmanager
def mask_heads(
    model: HookedTransformer,
    heads: Sequence[Head | str],
    kind: str | Ablation = "zero",
    *,
    values: HeadValues | list[HeadValues] | None = None,
    seed: int = 0,
    warn_if_idle: bool = True,
    positions: MaskPositions | str = "all",
    scale_factor: float = SCALE_FACTOR,
) -> Iterator[dict]:
    """Mask query heads on ``hook_z`` for every forward pass inside the block.

    Args:
        model: the model; hooks are removed on exit, also on error.
        heads: ``(layer, head)`` pairs or ``"L{l}H{h}"`` labels.
        kind: the ablation kind: a name in ``interventions.kinds.KINDS`` (``"zero"``, ``"mean"``,
            ``"resample"``, ``"scale"`` or a registered one) or an ``Ablation`` object.
        values: for ``mean``, ``head_means(model, prompts)``; for ``resample``,
            ``head_means(model, prompts, per_prompt=True)``.
        seed: seeds which reference prompt each head is resampled from.
        warn_if_idle: warn (``MaskNotFiring``) if no forward pass ran through the hooks.
        positions: ``"all"`` or ``"last"`` (position -1 of each forward pass only).
        scale_factor: for ``scale``, what ``z`` is multiplied by (a kind's option: ignored by
            kinds without it).

    Yields:
        A dict with ``calls``: how many times the hooks fired.

    Example:
        >>> with mask_heads(model, ["L3H2", (5, 0)], "mean", values=head_means(model, prompts)):
        ...     answers = generate(model, prompts)
    """
    parsed = parse_heads(heads, model.cfg.n_layers, model.cfg.n_heads)
    ablation = get_kind(kind, scale_factor=scale_factor)
    plan = rewrites(parsed, ablation, values, seed)
    last = MaskPositions.parse(positions) == "last"
    stats = {"calls": 0, "heads": parsed, "kind": ablation.name}

    def make_hook(hs: list[int], rewrite: Rewrite):
        idx = torch.tensor(hs, device=model.cfg.device)
        if rewrite.offset is not None:
            rewrite = Rewrite(rewrite.offset.to(model.cfg.device, model.cfg.dtype), rewrite.coef)

        def hook(z, hook):  # z: [batch pos head_index d_head]
            nonlocal idx
            stats["calls"] += 1
            if idx.device != z.device:  # layers split over GPUs (n_devices > 1)
                idx = idx.to(z.device)
            z = z.clone()
            at = slice(-1, None) if last else slice(None)
            z[:, at, idx, :] = rewrite.apply(z[:, at, idx, :])
            return z

        return hook

    fwd = [(hook_z(layer), make_hook(hs, rw)) for layer, (hs, rw) in sorted(plan.items())]
    with model.hooks(fwd_hooks=fwd):
        yield stats
    if warn_if_idle and parsed and stats["calls"] == 0:
        warnings.warn(
            "mask_heads: no forward pass ran inside the block; the mask changed nothing",
            MaskNotFiring,
            stacklevel=3,
        )
