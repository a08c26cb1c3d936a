"""``zero``: a masked head's ``z`` is set to 0."""

from interp_heads.interventions.kinds.base import KINDS, Ablation


@KINDS.register
class Zero(Ablation):
    name = "zero"

    def linear_baseline(self, z_sum, counts, seed):
        return z_sum[:1].new_zeros(z_sum[:1].shape)
