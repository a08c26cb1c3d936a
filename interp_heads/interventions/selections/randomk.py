"""``randomk``: k heads drawn uniformly at random, nested over k for a given seed.

Seed s fixes one random permutation of all heads and k takes its first k, so the k=32 set
contains the k=16 set and the curve over k shows the effect of adding heads, not of redrawing
them. By default the TopK heads are *not* excluded (a plain random control, which may draw the
task's own heads); ``exclude_top`` draws only from heads outside the TopK set of the same k (one
permutation per seed and k), the control of the retrieval-heads paper (Wu et al. 2024: "pruning
random non-retrieval heads").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from interp_heads.heads import Head, all_heads
from interp_heads.interventions.selections.base import (
    SELECTIONS,
    Selection,
    SelectionContext,
    rng,
    too_many,
)


@SELECTIONS.register
@dataclass(frozen=True)
class RandomK(Selection):
    name = "randomk"
    display = "RandomK"
    random = True
    dash = "dash"

    n_layers: int
    n_heads: int
    salt: str = ""
    exclude: Sequence[Head] = ()
    ranking: Sequence[Head] = ()
    options: RandomK.Options = field(default_factory=lambda: RandomK.Options())

    @dataclass(frozen=True)
    class Options:
        # ``kept_in``: the sweep's digest has always held it, also at its default
        exclude_top: bool = field(
            default=False,
            metadata={
                "help": "RandomK draws only heads outside the TopK set of the same k (the "
                "control of Wu et al. 2024: random non-retrieval heads)",
                "kept_in": ("sweep",),
            },
        )

    @classmethod
    def build(cls, options, ctx: SelectionContext):
        return cls(ctx.n_layers, ctx.n_heads, ctx.salt, ranking=ctx.ranking, options=options)

    def select(self, k: int, seed: int = 0) -> list[Head]:
        heads = all_heads(self.n_layers, self.n_heads)
        banned = set(map(tuple, self.exclude))
        if self.options.exclude_top:
            banned |= set(map(tuple, self.ranking[:k]))
        pool = [h for h in heads if h not in banned]
        if k > len(pool):
            raise too_many(k, len(pool), self.display)
        order = rng("randomk", self.salt, seed, self.options.exclude_top and k).permutation(
            len(pool)
        )
        return [pool[i] for i in order[:k]]
