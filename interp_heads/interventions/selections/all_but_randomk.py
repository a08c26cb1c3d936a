"""``all_but_randomk``: keep k random heads and mask every other head (the sufficiency control).

``k`` counts the heads *kept* (``kept = True``). The kept heads are RandomK's draw for the same
task, seed and k (nested over k: seed s fixes one permutation of all heads and k keeps its first
k), so the kept-set curve of a ranking (``all_but_topk``) has a random counterpart drawn exactly
as the masked-set control is. A random control: drawn once per seed.
"""

from __future__ import annotations

from dataclasses import dataclass

from interp_heads.heads import Head, all_heads
from interp_heads.interventions.selections.base import (
    SELECTIONS,
    Selection,
    SelectionContext,
    complement,
)
from interp_heads.interventions.selections.randomk import RandomK


@SELECTIONS.register
@dataclass(frozen=True)
class AllButRandomK(Selection):
    name = "all_but_randomk"
    aliases = ("allbutrandomk", "keep_randomk")
    display = "AllButRandomK"
    label = "RandomK kept (rest masked)"
    kept = True
    random = True
    dash = "10px,4px,2px,4px"  # long-dash-dot: the kept-set control

    n_layers: int
    n_heads: int
    salt: str = ""

    @classmethod
    def build(cls, options, ctx: SelectionContext):
        return cls(ctx.n_layers, ctx.n_heads, ctx.salt)

    def keeps(self, k: int, seed: int = 0) -> list[Head]:
        k = self.check_k(k, self.n_layers * self.n_heads)
        return RandomK(self.n_layers, self.n_heads, self.salt).select(k, seed) if k else []

    def select(self, k: int, seed: int = 0) -> list[Head]:
        return complement(all_heads(self.n_layers, self.n_heads), self.keeps(k, seed))
