"""The ablation kind's base class, its rewrite of ``hook_z`` and its registry (``interventions.kinds``)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

from interp_heads.errors import InputError
from interp_heads.registry import Registry
from interp_heads.vocab import AblationKind


@dataclass(frozen=True)
class Rewrite:
    """What one layer's masked heads become: ``z = offset + coef * z`` on those heads.

    ``coef`` None means 0 (a replacement: ``z = offset``); ``offset`` None means zeros. Every path
    that masks (``mask_heads``, the per-row masks of packed sweeps) applies it, so a kind's
    arithmetic lives in the kind.
    """

    offset: Any = None  # [n_masked, d_head], [from_end, n_masked, d_head] (per position), None
    coef: float | None = None

    @property
    def per_position(self) -> bool:
        """Whether the offset has one row per position counted from the end (``position_mean``)."""
        return self.offset is not None and self.offset.dim() == 3

    def apply(self, z):
        """``z[batch, pos, masked heads, d_head]`` rewritten (a new tensor; ``z`` is not changed)."""
        import torch

        offset = None if self.offset is None else self.offset.to(z.device, z.dtype)
        if self.per_position:  # row j for the position j before the pass's last one
            back = torch.arange(z.shape[-3] - 1, -1, -1, device=z.device)
            offset = offset[back.clamp(max=len(offset) - 1)]
        if self.coef is None:
            return torch.zeros_like(z) if offset is None else offset.expand_as(z)
        scaled = z * torch.tensor(self.coef, dtype=z.dtype, device=z.device)
        return scaled if offset is None else scaled + offset


@dataclass(frozen=True)
class Ablation:
    """An ablation kind. Subclasses set ``name``, declare their options as dataclass fields and
    override what differs from zero ablation."""

    name: ClassVar[str] = ""
    aliases: ClassVar[tuple[str, ...]] = ()

    def values(self, model, prompts, *, batch_size: int = 32):
        """The values shared by every condition of a task (None: the kind needs none)."""
        return None

    def replacement(self, layer: int, heads: list[int], values, generator):
        """What ``z[:, :, heads]`` of ``layer`` is set to, ``[len(heads), d_head]``; None: zeros.

        ``generator`` is one seeded ``torch.Generator`` per mask, drawn from in layer order.
        """
        return None

    def rewrite(self, layer: int, heads: list[int], values, generator) -> Rewrite:
        """How ``layer``'s masked ``heads`` are rewritten; a replacement by default."""
        return Rewrite(offset=self.replacement(layer, heads, values, generator))

    def linear_baseline(self, z_sum, counts, seed: int):
        """The replacement ``ablation_atp`` estimates against: ``[1 or example, layer, head, d_head]``.

        ``z_sum``: each example's sum of ``z`` over its non-pad positions ``[example, layer, head,
        d_head]``; ``counts``: those positions per example ``[example]``. A kind without one
        (the default) is refused by ``ablation_atp``.
        """
        raise NotImplementedError

    @property
    def linear(self) -> bool:
        """Whether ``ablation_atp`` can estimate this kind (it defines :meth:`linear_baseline`)."""
        return type(self).linear_baseline is not Ablation.linear_baseline

    def key(self) -> dict:
        """This kind's options as resume keys hold them (empty at their defaults)."""
        return {}

    @classmethod
    def option_names(cls) -> tuple[str, ...]:
        """The options this kind declares (its dataclass fields)."""
        return tuple(f.name for f in dataclasses.fields(cls))


KINDS: Registry[type[Ablation]] = Registry("ablation kind", vocab=AblationKind)


def get_kind(kind: str | Ablation, **settings) -> Ablation:
    """The kind ``kind`` names (``KINDS``), built with the settings it declares among ``settings``
    (the others are not its options and are ignored); an ``Ablation`` object is returned as is."""
    if isinstance(kind, Ablation):
        return kind
    cls = KINDS.get(kind)
    return cls(**{k: v for k, v in settings.items() if k in cls.option_names()})


def linear_kind(name: str) -> Ablation:
    """The kind ``name`` for ``ablation_atp``; InputError for one without a linear baseline."""
    kind = get_kind(name)
    if not kind.linear:
        raise InputError(f"ablation kind {kind.name!r} has no linear baseline for ablation_atp")
    return kind
