"""``gradxact``: gradient x activation on clean prompts (no corrupted prompts needed)."""

from interp_heads.attribution.methods.base import METHODS, Method


@METHODS.register
class GradXAct(Method):
    name = "gradxact"
    gradient = True
    target = "sum over pos, d_head of z * d log p(answer first token)/dz on clean prompts"

    def score(self, model, task, batches, opts, per_example):
        from interp_heads.attribution.gradients import gradxact_scores

        return gradxact_scores(model, batches, per_example=per_example), self.target
