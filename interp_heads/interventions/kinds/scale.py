"""``scale``: a masked head's ``z`` is multiplied by ``scale_factor`` (default ``1e-4``).

The mask of the Cognitive Mirrors study (Ma et al., NeurIPS 2025), which multiplies the head's
``o_proj`` input.
"""

from dataclasses import dataclass

from interp_heads.arguments import finite_number
from interp_heads.interventions.kinds.base import KINDS, Ablation, Rewrite
from interp_heads.vocab import SCALE_FACTOR


@KINDS.register
@dataclass(frozen=True)
class Scale(Ablation):
    name = "scale"
    scale_factor: float = SCALE_FACTOR

    def __post_init__(self):
        object.__setattr__(self, "scale_factor", finite_number(self.scale_factor))

    def rewrite(self, layer, heads, values, generator) -> Rewrite:
        return Rewrite(coef=float(self.scale_factor))

    def key(self) -> dict:
        return {"factor": float(self.scale_factor)}  # the name stored resume keys hold
