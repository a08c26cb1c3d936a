"""``exact``: activation patching, the clean head into the corrupted run (normalised logit diff)."""

from interp_heads.attribution.methods.base import METHODS, Method


@METHODS.register
class Exact(Method):
    name = "exact"
    target = (
        "normalised logit diff (clean=1, corrupted=0) after patching the clean head into the "
        "corrupted run"
    )
    corrupted = "required"

    def score(self, model, task, batches, opts, per_example):
        from interp_heads.attribution.patching import exact_scores

        return exact_scores(
            model, batches, max_rows=opts.max_rows, per_example=per_example
        ), self.target
