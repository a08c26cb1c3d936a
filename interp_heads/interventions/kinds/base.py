"""The ablation kind's base class and registry (``interventions.kinds``)."""

from __future__ import annotations

from typing import ClassVar

from interp_heads.errors import InputError
from interp_heads.registry import Registry
from interp_heads.vocab import AblationKind


class Ablation:
    """An ablation kind. Subclasses set ``name`` and override what differs from zero ablation."""

    name: ClassVar[str] = ""
    scales: ClassVar[bool] = False  # z * factor (the mask's ``factor``) instead of a replacement

    def values(self, model, prompts, *, batch_size: int = 32):
        """The values shared by every condition of a task (None: the kind needs none)."""
        return None

    def replacement(self, layer: int, heads: list[int], values, generator):
        """What ``z[:, :, heads]`` of ``layer`` is set to, ``[len(heads), d_head]``; None: zeros.

        ``generator`` is one seeded ``torch.Generator`` per mask, drawn from in layer order.
        """
        return None

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
        return not self.scales and type(self).linear_baseline is not Ablation.linear_baseline


KINDS: Registry[Ablation] = Registry("ablation kind", vocab=AblationKind)


def get_kind(name: str) -> Ablation:
    """The registered kind called ``name`` (``KINDS.get``)."""
    return KINDS.get(name)


def linear_kind(name: str) -> Ablation:
    """The kind ``name`` for ``ablation_atp``; InputError for one without a linear baseline."""
    kind = get_kind(name)
    if kind.scales:
        raise InputError(
            f"ablation kind {kind.name!r} scales z: ablation_atp has no baseline for it"
        )
    return kind
