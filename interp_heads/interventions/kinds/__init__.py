"""Ablation kinds: what a masked head's ``hook_z`` becomes, one file per kind, one registry.

A kind is an :class:`Ablation` class registered in :data:`KINDS` (``@KINDS.register``); its
options are the fields of its nested ``Options`` dataclass, declared there once: the config keys,
the ``ablate`` flags, the digests and ``mask_heads``' keywords are read from ``KINDS.options()``.
It knows

- :meth:`~Ablation.values`: the task-level values it replaces ``z`` with (computed once per task
  from the evaluated prompts; their digest is part of every condition's resume key);
- :meth:`~Ablation.rewrite`: how one layer's masked heads are rewritten, a :class:`Rewrite`
  ``z = offset + coef * z`` (by default the replacement :meth:`~Ablation.replacement` returns:
  ``[n_masked, d_head]``, None for zeros; ``scale`` multiplies instead);
- :meth:`~Ablation.linear_baseline`: the replacement that ``ablation_atp`` linearises against,
  from each example's position sums of ``z`` (kinds without one are refused by that method).

``mask_heads``, the per-row masks of packed sweeps, the sweep's value step and ``ablation_atp``
all go through these objects, so a new kind, options included, is one new file with a
registered class.
The built-ins are the files this package imports.
"""

# the import order is the registration order: the order names are listed in (help, tables)
# isort: off
from interp_heads.interventions.kinds import (  # noqa: F401 (registers)
    zero,
    mean,
    resample,
    scale,
    position_mean,
)

# isort: on
from interp_heads.interventions.kinds.base import (
    KINDS,
    Ablation,
    Rewrite,
    get_kind,
    linear_kind,
    prompt_ends,
)

__all__ = [
    "KINDS",
    "Ablation",
    "Rewrite",
    "get_kind",
    "linear_kind",
    "prompt_ends",
]
