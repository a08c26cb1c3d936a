"""``ablation_ig``: integrated gradients along z -> task mean, all heads together."""

from dataclasses import dataclass, field

from interp_heads.attribution.methods.base import METHODS, Method, Pos
from interp_heads.attribution.methods.base import Options as Common


@METHODS.register
class AblationIG(Method):
    name = "ablation_ig"
    gradient = True
    target = (
        "integrated gradients of log p(answer first token) along z -> task mean, all heads "
        "together ({steps} midpoint steps)"
    )
    signed = True
    refine_with = "mean_ablation"
    kinds = "mean"

    @dataclass(frozen=True)
    class Options(Common):
        steps: Pos = field(
            default=8, metadata={"help": "ablation_ig: midpoint steps along z -> task mean"}
        )

    def score(self, model, task, batches, opts, per_example):
        from interp_heads.attribution.paths import ablation_ig_scores

        scores = ablation_ig_scores(model, batches, opts.steps, per_example=per_example)
        return scores, self.target.format(steps=opts.steps)
