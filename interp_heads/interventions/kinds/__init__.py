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

from interp_heads.interventions.kinds import mean, resample, scale, zero  # noqa: F401 (registers)
from interp_heads.interventions.kinds.base import KINDS, Ablation, get_kind, linear_kind

__all__ = ["KINDS", "Ablation", "get_kind", "linear_kind"]
