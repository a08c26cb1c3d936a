"""``scale``: a masked head's ``z`` is multiplied by ``scale_factor`` (default ``1e-4``).

The mask of the Cognitive Mirrors study (Ma et al., NeurIPS 2025), which multiplies the head's
``o_proj`` input.
"""

from dataclasses import dataclass, field

from interp_heads.arguments import finite_number
from interp_heads.interventions.kinds.base import KINDS, Ablation, Rewrite


@KINDS.register
class Scale(Ablation):
    name = "scale"

    @dataclass(frozen=True)
    class Options:
        # ``stored_as``: the key the sweep's digest has held it under since before kinds had options
        scale_factor: float = field(
            default=1e-4,
            metadata={
                "help": "ablation 'scale': what a masked head's hook_z is multiplied by",
                "stored_as": "scale",
            },
        )

        def __post_init__(self):
            value = finite_number(self.scale_factor, "scale_factor")
            object.__setattr__(self, "scale_factor", value)

    def rewrite(self, layer, heads, values, generator) -> Rewrite:
        return Rewrite(coef=float(self.options.scale_factor))

    def key(self) -> dict:
        return {"factor": float(self.options.scale_factor)}  # the name stored resume keys hold
