"""``layermatched``: random heads with the same per-layer counts as the TopK set of the same k.

For each layer, as many random heads as TopK takes from it, drawn from that layer's non-TopK heads
first. It controls for "later layers matter more", a stronger control than RandomK.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from interp_heads.heads import Head
from interp_heads.interventions.selections.base import SELECTIONS, Selection, SelectionContext, rng


@SELECTIONS.register
@dataclass(frozen=True)
class LayerMatchedRandomK(Selection):
    name = "layermatched"
    aliases = ("layermatchedrandomk", "layer_matched")
    display = "LayerMatchedRandomK"
    label = "Layer-matched RandomK"
    random = True
    dash = "dot"

    ranking: Sequence[Head]
    n_heads: int
    salt: str = ""

    @classmethod
    def build(cls, options, ctx: SelectionContext):
        return cls(ctx.ranking, ctx.n_heads, ctx.salt)

    def select(self, k: int, seed: int = 0) -> list[Head]:
        top = list(self.ranking[:k])
        top_set = set(top)
        out: list[Head] = []
        for layer, count in sorted(Counter(layer for layer, _ in top).items()):
            draw = rng("layermatched", self.salt, seed, layer)
            others = [(layer, h) for h in range(self.n_heads) if (layer, h) not in top_set]
            same = [(layer, h) for h in range(self.n_heads) if (layer, h) in top_set]
            pick = [others[i] for i in draw.permutation(len(others))]
            pick += [same[i] for i in draw.permutation(len(same))]
            out.extend(pick[:count])
        return out
