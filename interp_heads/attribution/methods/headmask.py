"""``headmask``: head importance of Michel et al. (2019), E_x |dL/dmask_h| at mask = 1."""

from interp_heads.attribution.methods.base import METHODS, Method


@METHODS.register
class HeadMask(Method):
    name = "headmask"
    gradient = True
    target = "mean over examples of |dL/dmask| (L = -log p(answer first token)), Michel et al. 2019"

    def score(self, model, task, batches, opts, per_example):
        from interp_heads.attribution.gradients import headmask_scores

        return headmask_scores(model, batches, per_example=per_example), self.target
