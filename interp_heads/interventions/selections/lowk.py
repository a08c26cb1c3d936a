"""``lowk``: the k heads ranked *last* by the ranking (deterministic).

The opposite end of TopK: if the ranking is right, masking its bottom heads should barely move the
task, so LowK is a check on the ranking's tail (nested over k: the k=32 set contains the k=16 set).
TopK's selection read from the other end: errors name LowK (``display``).
"""

from __future__ import annotations

from dataclasses import dataclass

from interp_heads.heads import Head
from interp_heads.interventions.selections.base import SELECTIONS
from interp_heads.interventions.selections.topk import TopK


@SELECTIONS.register
@dataclass(frozen=True)
class LowK(TopK):
    name = "lowk"
    aliases = ("bottomk",)
    display = "LowK"
    label = "LowK (ranked last)"
    dash = "dot"

    def ordered(self) -> list[Head]:
        return list(reversed(self.ranking))  # the least important first
