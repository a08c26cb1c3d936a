"""``tailk``: the k heads of lowest signed score, the signed tail (deterministic).

For a method whose score is a signed estimate of what removing a head costs the task
(``ablation_atp``, ``atp``, ``exact``: positive hurts, negative helps), the signed tail is the
heads whose removal is estimated to *help* the task most: not unimportant heads (that is
``lowk``, the least |importance|) but heads working against the answer. For a method whose
scores are magnitudes (the probe's) the two coincide. A ranking given as a bare list of heads
has no scores: TailK reads it from its end.
"""

from __future__ import annotations

from dataclasses import dataclass

from interp_heads.heads import Head
from interp_heads.interventions.selections.base import SELECTIONS, SelectionContext
from interp_heads.interventions.selections.topk import TopK


@SELECTIONS.register
@dataclass(frozen=True)
class TailK(TopK):
    name = "tailk"
    aliases = ("signed_tail",)
    display = "TailK"
    label = "TailK (signed tail: removal estimated to help most)"
    dash = "dashdot"

    @classmethod
    def build(cls, options, ctx: SelectionContext):
        return cls(ctx.by_signed or ctx.ranking)

    def ordered(self) -> list[Head]:
        return list(reversed(self.ranking))  # the lowest signed score first
