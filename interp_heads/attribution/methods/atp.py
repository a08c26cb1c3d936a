"""``atp``: attribution patching, grad x (clean z - corrupted z) (Nanda 2023; Kramar et al. 2024)."""

from interp_heads.attribution.methods.base import METHODS, Method


@METHODS.register
class AtP(Method):
    name = "atp"
    gradient = True
    target = "attribution patching estimate of the normalised logit diff (grad x (clean z - corrupted z))"
    corrupted = "required"

    def score(self, model, task, batches, opts, per_example):
        from interp_heads.attribution.gradients import atp_scores

        return atp_scores(model, batches, per_example=per_example), self.target
