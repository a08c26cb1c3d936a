"""``scale``: a masked head's ``z`` is multiplied by the mask's factor (default ``1e-4``).

The mask of the Cognitive Mirrors study (Ma et al., NeurIPS 2025), which multiplies the head's
``o_proj`` input.
"""

from interp_heads.interventions.kinds.base import KINDS, Ablation


class Scale(Ablation):
    name = "scale"
    scales = True


KINDS.register("scale", Scale())
