"""Head masking on ``blocks.{l}.attn.hook_z``, per query head, during any forward or generation.

``hook_z`` holds each query head's attention-weighted values before the output projection, so
editing ``z[:, :, h]`` removes exactly head ``h``'s contribution. Under grouped-query attention
several query heads share a key/value head; masking at ``hook_z`` (not at K/V, not after ``W_O``)
still touches only the chosen query heads.

Ablation kinds:
    ``zero``: ``z = 0``.
    ``mean``: ``z`` = the head's mean over a reference set of prompts (all non-pad positions).
    ``resample``: ``z`` = the head's mean over the positions of one reference prompt drawn at
        random (seeded) per head: a noisier, example-specific replacement.
    ``scale``: ``z = factor * z`` (default ``1e-4``), the mask of the Cognitive Mirrors study
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
from interp_heads.interventions.kinds import get_kind
from interp_heads.interventions.means import HeadValues
from interp_heads.models.tl_compat import HookedTransformer
from interp_heads.vocab import SCALE_FACTOR, MaskPositions


class MaskNotFiring(UserWarning):
    """A mask was entered and left without its hooks ever running."""


def _replacements(
    model: HookedTransformer,
    heads: Sequence[Head],
    kind: str,
    values: HeadValues | list[HeadValues] | None,
    seed: int,
) -> dict[int, tuple[list[int], torch.Tensor | None]]:
    """``{layer: (masked heads, replacement or None)}`` of ``kind`` (``interventions.kinds``)."""
    ablation = get_kind(kind)
    by_layer: dict[int, list[int]] = defaultdict(list)
    for layer, head in heads:
        by_layer[layer].append(head)
    gen = torch.Generator().manual_seed(seed)
    out: dict[int, tuple[list[int], torch.Tensor | None]] = {}
    for layer, hs in by_layer.items():
        hs = sorted(set(hs))
        out[layer] = (hs, ablation.replacement(layer, hs, values, gen))
    return out


@contextmanager
def mask_heads(
    model: HookedTransformer,
    heads: Sequence[Head | str],
    kind: str = "zero",
    *,
    values: HeadValues | list[HeadValues] | None = None,
    seed: int = 0,
    warn_if_idle: bool = True,
    positions: MaskPositions | str = "all",
    factor: float = SCALE_FACTOR,
) -> Iterator[dict]:
    """Mask query heads on ``hook_z`` for every forward pass inside the block.

    Args:
        model: the model; hooks are removed on exit, also on error.
        heads: ``(layer, head)`` pairs or ``"L{l}H{h}"`` labels.
        kind: the ablation kind, ``"zero"``, ``"mean"``, ``"resample"`` or ``"scale"``
            (``AblationKind``).
        values: for ``mean``, ``head_means(model, prompts)``; for ``resample``,
            ``head_means(model, prompts, per_prompt=True)``.
        seed: seeds which reference prompt each head is resampled from.
        warn_if_idle: warn (``MaskNotFiring``) if no forward pass ran through the hooks.
        positions: ``"all"`` or ``"last"`` (position -1 of each forward pass only).
        factor: for ``scale``, what ``z`` is multiplied by.

    Yields:
        A dict with ``calls``: how many times the hooks fired.

    Example:
        >>> with mask_heads(model, ["L3H2", (5, 0)], "mean", values=head_means(model, prompts)):
        ...     answers = generate(model, prompts)
    """
    parsed = parse_heads(heads, model.cfg.n_layers, model.cfg.n_heads)
    plan = _replacements(model, parsed, kind, values, seed)
    scale = get_kind(kind).scales
    last = MaskPositions.parse(positions) == "last"
    stats = {"calls": 0, "heads": parsed, "kind": str(kind)}

    def make_hook(hs: list[int], repl: torch.Tensor | None):
        idx = torch.tensor(hs, device=model.cfg.device)
        if repl is not None:
            repl = repl.to(model.cfg.device, model.cfg.dtype)

        def hook(z, hook):  # z: [batch pos head_index d_head]
            nonlocal idx, repl
            stats["calls"] += 1
            if idx.device != z.device:  # layers split over GPUs (n_devices > 1)
                idx = idx.to(z.device)
                repl = repl.to(z.device) if repl is not None else None
            z = z.clone()
            at = slice(-1, None) if last else slice(None)
            if scale:
                f = torch.tensor(factor, dtype=z.dtype, device=z.device)  # as RowMasks rounds it
                z[:, at, idx, :] = z[:, at, idx, :] * f
            elif repl is None:
                z[:, at, idx, :] = 0.0
            else:
                z[:, at, idx, :] = repl
            return z

        return hook

    fwd = [(hook_z(layer), make_hook(hs, repl)) for layer, (hs, repl) in sorted(plan.items())]
    with model.hooks(fwd_hooks=fwd):
        yield stats
    if warn_if_idle and parsed and stats["calls"] == 0:
        warnings.warn(
            "mask_heads: no forward pass ran inside the block; the mask changed nothing",
            MaskNotFiring,
            stacklevel=3,
        )
