"""Which heads to mask: TopK from a ranking, and seeded random controls.

- ``TopK``: the k most important heads of a ranking (a ``HeadScores`` or any ordered head list).
- ``RandomK``: k heads drawn uniformly. Draws are *nested*: seed s fixes one random permutation of
  all heads and k takes its first k, so the k=32 set contains the k=16 set and the curve over k
  shows the effect of adding heads, not of redrawing them. By default the TopK heads are *not*
  excluded (a plain random control, which may draw the task's own heads); ``exclude_top=True``
  draws only from heads outside the TopK set of the same k (one permutation per seed and k), the
  control of the retrieval-heads paper (Wu et al. 2024: "pruning random non-retrieval heads").
- ``LayerMatchedRandomK``: for each layer, as many random heads as TopK takes from it, drawn from
  that layer's non-TopK heads first. It controls for "later layers matter more", a stronger
  control than RandomK that no peer tool offers.
- ``ExclusiveTopK``: the task's k highest-ranked heads among those in no other task's TopK of the
  same k: heads of *this* task, not heads every task needs (its collapse, set beside TopK's, tells
  the two apart).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from interp_heads.errors import InputError
from interp_heads.heads import Head, all_heads
from interp_heads.vocab import EXCLUSIVE_TOPK, LAYERMATCHED, RANDOMK, TOPK


def _rng(*parts) -> np.random.Generator:
    digest = hashlib.sha256(repr(parts).encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def ranked_heads(ranking) -> list[Head]:
    """All heads, most important first, from a ``HeadScores`` or an ordered list of heads."""
    if hasattr(ranking, "top"):
        n_layers, n_heads = ranking.scores.shape
        return list(ranking.top(n_layers * n_heads))
    return [tuple(h) for h in ranking]


@dataclass(frozen=True)
class TopK:
    """The k highest-ranked heads; deterministic (seed ignored)."""

    ranking: Sequence[Head]
    name: str = TOPK
    random: bool = False

    def select(self, k: int, seed: int = 0) -> list[Head]:
        return list(self.ranking[:k])


@dataclass(frozen=True)
class RandomK:
    """k heads drawn uniformly at random, nested over k for a given seed."""

    n_layers: int
    n_heads: int
    salt: str = ""
    exclude: Sequence[Head] = ()
    ranking: Sequence[Head] = ()
    exclude_top: bool = False
    name: str = RANDOMK
    random: bool = True

    def select(self, k: int, seed: int = 0) -> list[Head]:
        heads = all_heads(self.n_layers, self.n_heads)
        banned = set(map(tuple, self.exclude))
        if self.exclude_top:
            banned |= set(map(tuple, self.ranking[:k]))
        pool = [h for h in heads if h not in banned]
        if k > len(pool):
            raise InputError(f"k={k} exceeds the {len(pool)} heads available to RandomK")
        order = _rng("randomk", self.salt, seed, self.exclude_top and k).permutation(len(pool))
        return [pool[i] for i in order[:k]]


@dataclass(frozen=True)
class LayerMatchedRandomK:
    """Random heads with the same per-layer counts as the TopK set of the same k."""

    ranking: Sequence[Head]
    n_heads: int
    salt: str = ""
    name: str = LAYERMATCHED
    random: bool = True

    def select(self, k: int, seed: int = 0) -> list[Head]:
        top = list(self.ranking[:k])
        top_set = set(top)
        out: list[Head] = []
        for layer, count in sorted(Counter(layer for layer, _ in top).items()):
            rng = _rng("layermatched", self.salt, seed, layer)
            others = [(layer, h) for h in range(self.n_heads) if (layer, h) not in top_set]
            same = [(layer, h) for h in range(self.n_heads) if (layer, h) in top_set]
            pick = [others[i] for i in rng.permutation(len(others))]
            pick += [same[i] for i in rng.permutation(len(same))]
            out.extend(pick[:count])
        return out


@dataclass(frozen=True)
class ExclusiveTopK:
    """The k highest-ranked heads that are in no other ranking's top k; deterministic."""

    ranking: Sequence[Head]
    others: tuple[Sequence[Head], ...] = ()
    name: str = EXCLUSIVE_TOPK
    random: bool = False

    def select(self, k: int, seed: int = 0) -> list[Head]:
        banned = {tuple(h) for other in self.others for h in other[:k]}
        pool = [h for h in self.ranking if tuple(h) not in banned]
        if k > len(pool):
            raise ValueError(f"k={k} exceeds the {len(pool)} heads left to ExclusiveTopK")
        return pool[:k]


def make_selections(
    names: Sequence[str],
    ranking,
    n_layers: int,
    n_heads: int,
    salt: str = "",
    exclude_top: bool = False,
    others: Sequence = (),
) -> list:
    """Selections by name: ``topk``, ``randomk``, ``layermatched``, ``exclusive_topk`` (against
    the rankings ``others`` of the run's other tasks)."""
    order = ranked_heads(ranking)
    out = []
    for name in names:
        key = name.lower().replace("_", "").replace("-", "")
        if key == "topk":
            out.append(TopK(tuple(order)))
        elif key == "randomk":
            out.append(
                RandomK(n_layers, n_heads, salt, ranking=tuple(order), exclude_top=exclude_top)
            )
        elif key in ("layermatched", "layermatchedrandomk"):
            out.append(LayerMatchedRandomK(tuple(order), n_heads, salt))
        elif key == "exclusivetopk":
            out.append(ExclusiveTopK(tuple(order), tuple(tuple(ranked_heads(o)) for o in others)))
        else:
            raise InputError(
                f"unknown selection {name!r}: use topk, randomk, layermatched or exclusive_topk"
            )
    return out
