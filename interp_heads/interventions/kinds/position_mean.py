"""``position_mean``: a masked head's ``z`` at each position is its mean at that position counted
from the end, over the task's prompts (``interventions.means.position_means``).

The pooled ``mean`` replaces a head's ``z`` by one vector at every position, BOS included, which
erases its positional structure; this kind keeps it. Positions are counted from the end of each
forward pass (as ``positions = [-1]`` counts), so a prompt's own pass is aligned with its last
token; a pass longer than any reference prompt takes the farthest row for its earliest positions,
and under the KV cache each generated token's pass (one position) takes row 0, the last prompt
token's mean. Not in packed sweeps (their per-row values hold one vector per head) nor in
``ablation_atp`` (no linear baseline).
"""

from interp_heads.interventions.kinds.base import KINDS, Ablation


@KINDS.register
class PositionMean(Ablation):
    name = "position_mean"

    def values(self, model, prompts, *, batch_size: int = 32, batch_padding: int | None = None):
        from interp_heads.interventions.means import position_means

        return position_means(model, prompts, batch_size=batch_size, batch_padding=batch_padding)

    def replacement(self, layer, heads, values, generator):
        if not isinstance(values, dict) or values[layer].dim() != 3:
            raise ValueError(
                "kind='position_mean' needs values=position_means(model, reference_prompts)"
            )
        return values[layer][:, heads].clone()  # [from_end, n_masked, d_head]
