"""Head masking on ``blocks.{l}.attn.hook_z``, per query head, during any forward or generation.

``hook_z`` holds each query head's attention-weighted values before the output projection, so
editing ``z[:, :, h]`` removes exactly head ``h``'s contribution. Under grouped-query attention
several query heads share a key/value head; masking at ``hook_z`` (not at K/V, not after ``W_O``)
still touches only the chosen query heads.

Ablation kinds (each a registered class in ``interventions.kinds`` that owns its rewrite of ``z``
and declares its options, which ``mask_heads`` takes as keywords):
    ``zero``: ``z = 0``.
    ``mean``: ``z`` = the head's mean over a reference set of prompts (all non-pad positions).
    ``resample``: ``z`` = the head's mean over the positions of one reference prompt drawn at
        random (seeded) per head: a noisier, example-specific replacement.
    ``scale``: ``z`` multiplied by the kind's factor (default ``1e-4``), the mask of the Cognitive
        Mirrors study (Ma et al., NeurIPS 2025), which multiplies the head's ``o_proj`` input.

Mask positions (``positions``):
    ``all``: every position of every forward pass. The replacement does not depend on the
        position, so masked generation with the KV cache equals masked generation without it.
    ``last``: only position -1 of each forward pass. Under the KV cache that is the last prompt
        token, then every generated token; without the cache each step recomputes the whole
        sequence and masks only its last token, so the two differ.
    ``generated``: the prompt's pass unmasked, then every later (KV-cached) pass, i.e. each
        generated position: what the Cognitive Mirrors code does (pyvene's ``generate`` without
        ``intervene_on_prompt``), so the first generated token is the unmasked model's.
    a list of positions or a token predicate: see ``interventions.positions``.

``mask_hooks`` gives the same mask as TransformerLens ``fwd_hooks`` for ``run_with_hooks``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext

import torch

from interp_heads.arguments import torch_seed
from interp_heads.errors import InputError
from interp_heads.heads import Head, heads_by_layer, hook_z
from interp_heads.interventions.kinds import Ablation, Rewrite, get_kind
from interp_heads.interventions.means import HeadValues
from interp_heads.interventions.positions import (
    PositionSpec,
    TokenPositions,
    blend,
    parse_positions,
)
from interp_heads.interventions.targets import mask_targets
from interp_heads.models.alike import alike_hooks
from interp_heads.models.tl_compat import HookedTransformer


class MaskNotFiring(UserWarning):
    """A mask was entered and left without its hooks ever running."""


def rewrites(
    heads: Sequence[Head],
    kind: Ablation,
    values: HeadValues | list[HeadValues] | None,
    seed: int,
) -> dict[int, tuple[list[int], Rewrite]]:
    """``{layer: (masked heads, their rewrite)}`` of ``kind`` (``interventions.kinds``)."""
    gen = torch.Generator().manual_seed(seed)
    out: dict[int, tuple[list[int], Rewrite]] = {}
    for layer, hs in heads_by_layer(heads).items():
        hs = sorted(set(hs))
        out[layer] = (hs, kind.rewrite(layer, hs, values, gen))
    return out


def _values(model, ablation: Ablation, values):
    """``values`` as the kind uses them: prompts are turned into the kind's values (head means)."""
    kind = ablation.name
    if isinstance(values, str):
        values = [values]
    if isinstance(values, list | tuple) and not values:
        raise InputError(
            f"mask_heads: values is empty; kind={kind!r} needs the reference prompts to average "
            "each head's z over (values=prompts) or head_means(model, prompts)"
        )
    if isinstance(values, list | tuple) and values and all(isinstance(v, str) for v in values):
        return ablation.values(model, list(values))
    if values is None and type(ablation).values is not Ablation.values:
        raise InputError(
            f"mask_heads: kind={kind!r} (the default, as in the CLI and configs) needs values: "
            f"the prompts to average each head's z over (values=prompts) or "
            f"head_means(model, prompts); kind='zero' needs none"
        )
    return values


def _hooks(model, heads, kind, values, seed, where, options, k) -> tuple[list, dict, bool]:
    """The mask's ``(hook_name, fn)`` pairs, the dict their calls are counted in, and whether
    they treat every row and every pass alike (what ``generation.shared_start`` relies on)."""
    parsed = mask_targets(heads, model.cfg.n_layers, model.cfg.n_heads, k)
    torch_seed(seed)  # the checks the config makes of the same settings (interp_heads.arguments)
    ablation = get_kind(kind, **options)  # every option checked by the kind declaring it
    values = _values(model, ablation, values) if parsed else values
    plan = rewrites(parsed, ablation, values, seed)
    last = where == "last"
    chosen = where if isinstance(where, TokenPositions) else None
    stats = {"calls": 0, "heads": parsed, "kind": ablation.name}
    alike = where == "all" and not any(rw.per_position for _, rw in plan.values())

    def make_hook(hs: list[int], rewrite: Rewrite):
        idx = torch.tensor(hs, device=model.cfg.device)
        if rewrite.offset is not None:
            rewrite = Rewrite(rewrite.offset.to(model.cfg.device, model.cfg.dtype), rewrite.coef)

        def hook(z, hook):  # z: [batch pos head_index d_head]
            nonlocal idx
            stats["calls"] += 1
            if idx.device != z.device:  # layers split over GPUs (n_devices > 1)
                idx = idx.to(z.device)
            sel, unmasked = (chosen.current(z), z) if chosen is not None else (None, None)
            z = z.clone()
            at = slice(-1, None) if last else slice(None)
            z[:, at, idx, :] = rewrite.apply(z[:, at, idx, :])
            return z if sel is None else blend(unmasked, z, sel)

        return hook

    fwd = [(hook_z(layer), make_hook(hs, rw)) for layer, (hs, rw) in sorted(plan.items())]
    return fwd, stats, alike


def mask_hooks(
    model: HookedTransformer,
    heads,
    kind: str | Ablation = "mean",
    *,
    values=None,
    seed: int = 0,
    positions: PositionSpec = "all",
    k: int | None = None,
    **options,
) -> list[tuple[str, Callable]]:
    """The mask of :func:`mask_heads` as TransformerLens ``fwd_hooks``: ``[(hook_name, fn), ...]``.

    They compose with ``model.run_with_hooks(tokens, fwd_hooks=...)``, ``model.hooks(...)`` and
    ``generate(..., fwd_hooks=...)`` and give the same logits as the ``mask_heads`` block. Positions
    are ``"all"`` or ``"last"`` here: ``"generated"``, chosen positions and predicates need the
    model's forward pre-hook that only the ``mask_heads`` block attaches.
    """
    where = parse_positions(positions)
    if not isinstance(where, str):
        raise InputError(
            "mask_hooks: positions must be 'all' or 'last'; 'generated', a list of positions or a "
            "predicate needs the per-pass token positions that only `with mask_heads(...)` resolves"
        )
    return _hooks(model, heads, kind, values, seed, where, options, k)[0]


@contextmanager
def mask_heads(
    model: HookedTransformer,
    heads,
    kind: str | Ablation = "mean",
    *,
    values=None,
    seed: int = 0,
    warn_if_idle: bool = True,
    positions: PositionSpec = "all",
    k: int | None = None,
    **options,
) -> Iterator[dict]:
    """Mask query heads on ``hook_z`` for every forward pass inside the block.

    Args:
        model: the model; hooks are removed on exit, also on error.
        heads: ``(layer, head)`` pairs or ``"L{l}H{h}"`` labels (each once), or a ``HeadScores``
            with ``k`` (its top ``k`` heads); see ``interventions.targets``.
        kind: the ablation kind: a name in ``interventions.kinds.KINDS`` (``"mean"``, the
            default as in the CLI and configs, ``"zero"``, ``"resample"``, ``"scale"`` or a
            registered one) or an ``Ablation`` object.
        values: for ``mean`` and ``resample``, the reference prompts to average over (``values=
            prompts``: the kind computes them), or precomputed ``head_means(model, prompts)``
            (``per_prompt=True`` for ``resample``). ``zero`` and ``scale`` need none.
        seed: seeds which reference prompt each head is resampled from.
        warn_if_idle: warn (``MaskNotFiring``) if no forward pass ran through the hooks.
        positions: ``"all"``, ``"last"`` (position -1 of each forward pass), ``"generated"``
            (every pass that continues a KV cache: the generated positions, the prompt unmasked),
            a list of positions (negative ones count from the end of each pass) or a predicate on
            a token's text (``interventions.positions``).
        k: with a ``HeadScores`` as ``heads``, how many of its top heads to mask.
        **options: the ablation kinds' options by name (the fields of their ``Options``, e.g.
            ``scale``'s factor); each is checked, and one the kind does not declare is ignored.

    Yields:
        A dict with ``calls``: how many times the hooks fired.

    Example:
        >>> with mask_heads(model, ["L3H2", (5, 0)], "mean", values=prompts):
        ...     answers = generate(model, prompts)
    """
    where = parse_positions(positions)
    fwd, stats, alike = _hooks(model, heads, kind, values, seed, where, options, k)
    chosen = where.attach(model) if isinstance(where, TokenPositions) else nullcontext()
    with chosen, model.hooks(fwd_hooks=fwd), alike_hooks(model, len(fwd) if alike else 0):
        yield stats
    if isinstance(where, TokenPositions):
        where.check_reached()
    if warn_if_idle and stats["heads"] and stats["calls"] == 0:
        warnings.warn(
            "mask_heads: no forward pass ran inside the block; the mask changed nothing",
            MaskNotFiring,
            stacklevel=3,
        )
    elif warn_if_idle and stats["heads"] and _generated(where) and not where.passes_selecting:
        warnings.warn(
            "mask_heads: positions='generated' masks the passes that continue a KV cache and none "
            "ran (generation without the cache, or single forward passes): the mask changed nothing",
            MaskNotFiring,
            stacklevel=3,
        )


def _generated(where) -> bool:
    return isinstance(where, TokenPositions) and where.generated
