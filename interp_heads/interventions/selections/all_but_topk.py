"""``all_but_topk``: keep the k highest-ranked heads and mask every other head (sufficiency).

``k`` counts the heads *kept* (``kept = True``): the mask is the complement of TopK's set, so
k = 0 masks every head and k = all heads masks none (the unmasked model). It is the kept-set
curve of a ranking (MIB's circuit faithfulness at node level; the Cognitive Mirrors study's
``--use_head last`` mode, hence the alias ``last``). Deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from interp_heads.heads import Head
from interp_heads.interventions.selections.base import (
    SELECTIONS,
    Selection,
    SelectionContext,
    complement,
)


@SELECTIONS.register
@dataclass(frozen=True)
class AllButTopK(Selection):
    name = "all_but_topk"
    aliases = ("last", "allbuttopk", "keep_topk")
    display = "AllButTopK"
    label = "TopK kept (rest masked)"
    kept = True
    dash = "longdash"

    ranking: Sequence[Head]

    @classmethod
    def build(cls, options, ctx: SelectionContext):
        return cls(ctx.ranking)

    def keeps(self, k: int, seed: int = 0) -> list[Head]:
        return list(self.ranking[: self.check_k(k, len(self.ranking))])

    def select(self, k: int, seed: int = 0) -> list[Head]:
        return complement(self.ranking, self.keeps(k, seed))
