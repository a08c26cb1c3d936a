"""Condition-batched head masking: each batch row masks its own heads with its own values.

``interp_heads.interventions.masks.mask_heads`` applies one mask to every row of a batch, so a sweep runs each
condition (task, selection, k, seed) alone. Here a :class:`RowMasks` holds one mask per condition
as two tables per layer, ``active [condition, head_index]`` and ``values [condition, head_index,
d_head]``, and :func:`mask_rows` edits ``hook_z`` as
``z[b, :, h] = values[c_b, h] if active[c_b, h] else z[b, :, h]`` where ``c_b`` is the condition of
batch row ``b``. The caller tells the mask which conditions the current batch holds
(``handle.rows = ...``) before each batch; this module never reorders rows.

Each condition's kind rewrites its heads as ``z = offset + coef * z``
(``interventions.kinds.Rewrite``): ``values`` holds the offsets and, when some condition
multiplies (``scale``), ``scale [condition, head_index]`` the coefficients (0 for replacements);
with ``positions="last"`` only position -1 of each forward pass is edited, with
``positions="generated"`` only the passes that continue a KV cache (the prompt's pass is left
alone), as ``mask_heads`` does.

The rewrites come from ``interventions.masks.rewrites``, the function ``mask_heads`` uses, and
are written with ``torch.where``, so a row masked here gets bit-for-bit the ``z`` it would get under
``mask_heads`` alone, on the prompt pass and on every KV-cached step.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field

import torch
from jaxtyping import Bool, Float, Int

from interp_heads.errors import InputError
from interp_heads.heads import Head, hook_z, parse_heads
from interp_heads.interventions.kinds import Ablation, get_kind
from interp_heads.interventions.masks import MaskNotFiring, rewrites
from interp_heads.interventions.means import HeadValues
from interp_heads.interventions.positions import TokenPositions, blend
from interp_heads.models.tl_compat import HookedTransformer


@dataclass
class RowMasks:
    """Per-condition head masks, one table pair per masked layer.

    Attributes:
        active: ``{layer: [condition, head_index]}`` booleans, True where the head is replaced.
        values: ``{layer: [condition, head_index, d_head]}`` replacements (zeros for ``zero``).
        n_conditions: number of conditions (rows of every table).
        scale: ``{layer: [condition, head_index]}`` coefficients of the conditions whose kind
            multiplies ``z`` (zeros elsewhere); empty when no condition does.
        last: edit only position -1 of each forward pass (``positions="last"``).
        generated: edit only the passes that continue a KV cache (``positions="generated"``).
    """

    active: dict[int, Bool[torch.Tensor, "condition head_index"]]
    values: dict[int, Float[torch.Tensor, "condition head_index d_head"]]
    n_conditions: int
    scale: dict[int, Float[torch.Tensor, "condition head_index"]] = field(default_factory=dict)
    last: bool = False
    generated: bool = False

    @classmethod
    def build(
        cls,
        model: HookedTransformer,
        conditions: Sequence[
            tuple[Sequence[Head | str], str | Ablation, HeadValues | list[HeadValues] | None, int]
        ],
        *,
        positions: str = "all",
        **options,
    ) -> RowMasks:
        """Tables for ``conditions``: ``(heads, kind, values, seed)`` each, as ``mask_heads`` takes them.

        A condition with no heads (the unmasked baseline) leaves its rows untouched. ``positions``
        and the kinds' ``options`` apply to every condition, as ``mask_heads`` takes them.
        """
        from interp_heads.choices import MaskPositions

        cfg = model.cfg
        plans = [
            rewrites(
                parse_heads(heads, cfg.n_layers, cfg.n_heads),
                get_kind(kind, **options),
                values,
                seed,
            )
            for heads, kind, values, seed in conditions
        ]
        layers = sorted({layer for plan in plans for layer in plan})
        n = len(conditions)
        active = {layer: torch.zeros(n, cfg.n_heads, dtype=torch.bool) for layer in layers}
        vals = {layer: torch.zeros(n, cfg.n_heads, cfg.d_head, dtype=cfg.dtype) for layer in layers}
        scaling = any(rw.coef is not None for plan in plans for _, rw in plan.values())
        scale = (
            {layer: torch.zeros(n, cfg.n_heads, dtype=cfg.dtype) for layer in layers}
            if scaling
            else {}
        )
        for c, plan in enumerate(plans):
            for layer, (hs, rw) in plan.items():
                active[layer][c, hs] = True
                if rw.per_position:
                    raise InputError(
                        "packed sweeps hold one replacement per head: run kind 'position_mean' "
                        "unpacked (pack_rows=0)"
                    )
                if rw.offset is not None:
                    vals[layer][c, hs] = rw.offset.to(cfg.dtype)
                if rw.coef is not None:
                    scale[layer][c, hs] = rw.coef
        device = cfg.device
        return cls(
            {layer: t.to(device) for layer, t in active.items()},
            {layer: t.to(device) for layer, t in vals.items()},
            n,
            {layer: t.to(device) for layer, t in scale.items()},
            MaskPositions.parse(positions) == MaskPositions.LAST,
            MaskPositions.parse(positions) == MaskPositions.GENERATED,
        )


class RowMaskHandle:
    """What :func:`mask_rows` yields: set ``rows`` (condition index per batch row) before each batch."""

    def __init__(self, device):
        self.device = device
        self.calls = 0
        self._rows: torch.Tensor | None = None

    @property
    def rows(self) -> Int[torch.Tensor, " batch"] | None:
        return self._rows

    @rows.setter
    def rows(self, conditions: Sequence[int] | torch.Tensor) -> None:
        self._rows = torch.as_tensor(conditions, dtype=torch.long).to(self.device)


@contextmanager
def mask_rows(
    model: HookedTransformer, masks: RowMasks, *, warn_if_idle: bool = True
) -> Iterator[RowMaskHandle]:
    """Mask heads per batch row on ``hook_z`` for every forward pass inside the block.

    Args:
        model: the model; hooks are removed on exit, also on error.
        masks: the per-condition tables (:meth:`RowMasks.build`).
        warn_if_idle: warn (``MaskNotFiring``) if some layer is masked and no forward pass ran.

    Yields:
        A :class:`RowMaskHandle`; assign ``handle.rows`` (one condition index per batch row) before
        each batch. A forward pass whose batch size differs from ``len(handle.rows)`` raises.

    Example:
        >>> masks = RowMasks.build(model, [([], "zero", None, 0), (["L3H2"], "zero", None, 0)])
        >>> with mask_rows(model, masks) as handle:
        ...     handle.rows = [0, 1]  # row 0 unmasked, row 1 without L3H2
        ...     logits = model(tokens)
    """
    handle = RowMaskHandle(model.cfg.device)

    def make_hook(layer: int):
        active, values = masks.active[layer], masks.values[layer]
        scale = masks.scale.get(layer)

        def hook(z, hook):  # z: [batch pos head_index d_head]
            rows = handle.rows
            if rows is None or rows.shape[0] != z.shape[0]:
                got = None if rows is None else rows.shape[0]
                raise ValueError(
                    f"mask_rows: batch has {z.shape[0]} rows but handle.rows holds {got}"
                )
            handle.calls += 1
            keep = active[rows][:, None, :, None]  # [batch 1 head_index 1]
            if masks.last:
                z, tail = z.clone(), z[:, -1:]
                z[:, -1:] = _masked(tail, keep, values[rows], scale, rows)
                return z
            if generated is not None:
                return blend(z, _masked(z, keep, values[rows], scale, rows), generated.current(z))
            return _masked(z, keep, values[rows], scale, rows)

        return hook

    fwd = [(hook_z(layer), make_hook(layer)) for layer in sorted(masks.active)]
    generated = TokenPositions(generated=True) if masks.generated else None
    passes = generated.attach(model) if generated is not None else nullcontext()
    with passes, model.hooks(fwd_hooks=fwd):
        yield handle
    if warn_if_idle and fwd and handle.calls == 0:
        warnings.warn(
            "mask_rows: no forward pass ran inside the block; the mask changed nothing",
            MaskNotFiring,
            stacklevel=3,
        )


def _masked(z, keep, values, scale, rows):
    """``z`` with the kept heads replaced by ``values``, or scaled (``scale`` rows, when given)."""
    new = values[:, None].to(z.dtype)
    if scale is not None:  # offset + coef * z (coef 0 for the replacing conditions)
        new = new + scale[rows][:, None, :, None].to(z.dtype) * z
    return torch.where(keep, new, z)
