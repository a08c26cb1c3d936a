"""``mean_ablation``: the exact effect of replacing each head's z by its task mean."""

from interp_heads.attribution.methods.base import METHODS, Method


@METHODS.register
class MeanAblation(Method):
    name = "mean_ablation"
    corrupted = "optional"  # with corrupted answers the normalised logit diff, else log-prob
    signed = True

    def score(self, model, task, batches, opts, per_example):
        from interp_heads.attribution.patching import mean_ablation_scores

        scores, target = mean_ablation_scores(
            model, batches, max_rows=opts.max_rows, per_example=per_example
        )
        return (
            scores,
            f"{target} when the head's z is replaced by its task mean (all non-pad positions)",
        )
