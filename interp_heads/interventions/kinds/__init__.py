"""Ablation kinds: what a masked head's ``hook_z`` becomes, one file per kind, one registry.

A kind is an :class:`Ablation` object registered in :data:`KINDS` under its name. It knows

- :meth:`~Ablation.values`: the task-level values it replaces ``z`` with (computed once per task
  from the evaluated prompts; their digest is part of every condition's resume key);
- :meth:`~Ablation.replacement`: the ``[n_masked, d_head]`` tensor one layer's masked heads get
  (None: zeros), or ``scales = True`` to multiply ``z`` by the mask's factor instead;
- :meth:`~Ablation.linear_baseline`: the replacement that ``ablation_atp`` linearises against,
  from each example's position sums of ``z`` (kinds without one are refused by that method).

``mask_heads``, the per-row masks of packed sweeps, the sweep's value step and ``ablation_atp``
all go through these objects, so a new kind is one new file plus ``KINDS.register(...)``.
The built-in names are ``vocab.AblationKind``.
"""

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


def _load_builtins() -> None:
    from interp_heads.interventions.kinds import mean, resample, scale, zero  # noqa: F401


KINDS: Registry[Ablation] = Registry("ablation kind", _load_builtins, vocab=AblationKind)


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
