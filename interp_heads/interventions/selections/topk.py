"""``topk``: the k highest-ranked heads (deterministic)."""

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
class TopK(Selection):
    name = "topk"
    display = "TopK"
    dash = "solid"

    ranking: Sequence[Head]

    @classmethod
    def build(cls, options, ctx: SelectionContext):
        return cls(ctx.ranking)

    def ordered(self) -> list[Head]:
        """The heads in the order this selection takes them (most important first)."""
        return list(self.ranking)

    def select(self, k: int, seed: int = 0) -> list[Head]:
        if k > len(self.ranking):
            raise too_many(k, len(self.ranking), self.display)  # names this selection
        return self.ordered()[:k]
