"""``mean``: a masked head's ``z`` is its mean over the task's prompts (all non-pad positions)."""

from interp_heads.interventions.kinds.base import KINDS, Ablation


@KINDS.register
class Mean(Ablation):
    name = "mean"

    def values(self, model, prompts, *, batch_size: int = 32, batch_padding: int | None = None):
        from interp_heads.interventions.means import head_means

        return head_means(model, prompts, batch_size=batch_size, batch_padding=batch_padding)

    def replacement(self, layer, heads, values, generator):
        if not isinstance(values, dict):
            raise ValueError("kind='mean' needs values=head_means(model, reference_prompts)")
        return values[layer][heads].clone()

    def linear_baseline(self, z_sum, counts, seed):
        return (z_sum.sum(0) / counts.sum())[None]
