"""``lowk``: the k heads of least |importance| (deterministic).

The opposite end of TopK by magnitude: if the ranking is right, masking the heads it scores
nearest zero should barely move the task, so LowK is a check on the ranking's tail (nested over
k: the k=32 set contains the k=16 set). It reads the scores' magnitudes (``by_abs``), not the
ranking's order: for a method that ranks by signed score (``ablation_atp``, ``atp``, ...) the
ranking's last heads are the most negative, whose removal is estimated to *help* the most; that
signed tail is ``tailk``, a selection of its own. A ranking given as a bare list of heads has no
scores, so LowK reads it from its end. Until 2026-12-07 LowK was the ranking read from its end
(the signed tail for signed methods); configs that say ``lowk`` now mean the least |importance|
(CHANGELOG). TopK's selection read from the other end: errors name LowK (``display``).
"""

from __future__ import annotations

from dataclasses import dataclass

from interp_heads.heads import Head
from interp_heads.interventions.selections.base import SELECTIONS, SelectionContext
from interp_heads.interventions.selections.topk import TopK


@SELECTIONS.register
@dataclass(frozen=True)
class LowK(TopK):
    name = "lowk"
    aliases = ("bottomk",)
    display = "LowK"
    label = "LowK (least |importance|)"
    dash = "dot"

    @classmethod
    def build(cls, options, ctx: SelectionContext):
        return cls(ctx.by_abs or ctx.ranking)

    def ordered(self) -> list[Head]:
        return list(reversed(self.ranking))  # the least important first
