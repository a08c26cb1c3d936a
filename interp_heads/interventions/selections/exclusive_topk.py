"""``exclusive_topk``: the task's k highest-ranked heads among those in no other task's TopK of
the same k: heads of *this* task, not heads every task needs (its collapse, set beside TopK's,
tells the two apart). Deterministic."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from interp_heads.heads import Head
from interp_heads.interventions.selections.base import (
    SELECTIONS,
    Selection,
    SelectionContext,
    too_many,
)


@SELECTIONS.register
@dataclass(frozen=True)
class ExclusiveTopK(Selection):
    name = "exclusive_topk"
    display = "ExclusiveTopK"
    label = "Exclusive TopK"
    dash = "dashdot"

    ranking: Sequence[Head]
    others: tuple[Sequence[Head], ...] = ()

    @classmethod
    def build(cls, options, ctx: SelectionContext):
        return cls(ctx.ranking, ctx.others)

    def select(self, k: int, seed: int = 0) -> list[Head]:
        banned = {tuple(h) for other in self.others for h in other[:k]}
        pool = [h for h in self.ranking if tuple(h) not in banned]
        if k > len(pool):
            raise too_many(k, len(pool), self.display)
        return pool[:k]
