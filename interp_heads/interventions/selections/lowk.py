"""``lowk``: the k heads ranked *last* by the ranking (deterministic).

The opposite end of TopK: if the ranking is right, masking its bottom heads should barely move the
task, so LowK is a check on the ranking's tail (nested over k: the k=32 set contains the k=16 set).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from interp_heads.heads import Head
from interp_heads.interventions.selections.base import SELECTIONS, Selection, too_many


@SELECTIONS.register
@dataclass(frozen=True)
class LowK(Selection):
    name = "lowk"
    aliases = ("bottomk",)
    display = "LowK"
    label = "LowK (ranked last)"
    dash = "dot"

    ranking: Sequence[Head]

    @classmethod
    def build(cls, ctx):
        return cls(ctx.ranking)

    def select(self, k: int, seed: int = 0) -> list[Head]:
        if k > len(self.ranking):
            raise too_many(k, len(self.ranking), self.display)
        return list(reversed(self.ranking))[:k]  # the least important first
