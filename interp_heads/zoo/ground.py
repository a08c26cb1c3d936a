"""What an enumeration says is true: the minimum sufficient set, each head's necessity and the
damage of the optimal k-set, from :class:`~interp_heads.zoo.truth.Enumeration`.

Faithfulness is the toolkit's (``analysis.sufficiency``, MIB's): ``f = (m(C) - m(none)) /
(m(all) - m(none))`` with m the mean answer log-prob over the prompts, C the kept set, every other
head ablated. The true minimum sufficient set is the smallest kept set with ``f >= target``
(``analysis.head_search.TARGET``, 0.9); several of that size are ties, all listed. The damage of
masking a set A is ``m(all) - m(all but A)``; the optimal k-set is the A of k heads with the most
damage. A head's necessity is its single-head damage and in how many of the optimal k-sets
(k = 1 .. n - 1) it is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from interp_heads.errors import InputError
from interp_heads.heads import Head, head_label
from interp_heads.zoo.truth import Enumeration

TARGET = 0.9


def heads_of(mask: int, n_heads: int, n_total: int) -> list[Head]:
    return [divmod(i, n_heads) for i in range(n_total) if (int(mask) >> i) & 1]


def mask_of(heads, n_heads: int) -> int:
    return sum(1 << (layer * n_heads + head) for layer, head in heads)


def faithfulness(e: Enumeration, metric: str = "logprob") -> np.ndarray:
    """f of every enumerated kept set (NaN where all and none score the same)."""
    full = e.value((1 << e.n_total) - 1, metric)
    none = e.value(0, metric)
    gap = full - none
    return (e.values[metric] - none) / gap if gap != 0 else np.full(len(e.masks), np.nan)


@dataclass
class GroundTruth:
    """The truth of one model under one ablation kind (see the module docstring)."""

    kind: str
    n_layers: int
    n_heads: int
    m_all: float
    m_none: float
    minimum: list[list[Head]]  # every minimum sufficient set (ties)
    minimum_f: list[float]
    single_damage: np.ndarray  # [n_total], flat head order
    optimal_damage: np.ndarray  # [n_total + 1]: k = 0 .. n_total masked (NaN: not enumerated)
    optimal_sets: list[list[Head] | None]
    in_optimal: np.ndarray  # [n_total]: in how many optimal k-sets (1 <= k < n) each head is
    complete: bool

    @property
    def n_total(self) -> int:
        return self.n_layers * self.n_heads

    @property
    def min_size(self) -> int:
        return len(self.minimum[0])

    @property
    def necessary(self) -> np.ndarray:
        """``[n_total]`` bool: the head is in some minimum sufficient set (the positives a
        ranking is scored against)."""
        out = np.zeros(self.n_total, dtype=bool)
        for heads in self.minimum:
            for layer, head in heads:
                out[layer * self.n_heads + head] = True
        return out

    def labels(self, heads) -> str:
        return ",".join(head_label(*h) for h in heads)


def ground_truth(e: Enumeration, target: float = TARGET, metric: str = "logprob") -> GroundTruth:
    """The truth of an enumeration (InputError when ablating every head does not lower m)."""
    full_mask = (1 << e.n_total) - 1
    m_all, m_none = e.value(full_mask, metric), e.value(0, metric)
    if not m_all > m_none:
        raise InputError(
            f"ablating every head ({e.kind}) does not lower the answer's {metric} "
            f"({m_all:.3f} unablated, {m_none:.3f} all ablated): no truth to find"
        )
    f, sizes = faithfulness(e, metric), e.sizes
    ok = f >= target
    smallest = int(sizes[ok].min())  # every head kept has f = 1
    ties = np.flatnonzero(ok & (sizes == smallest))
    minimum = [heads_of(int(e.masks[i]), e.n_heads, e.n_total) for i in ties]
    n = e.n_total
    single = np.array([m_all - e.value(full_mask & ~(1 << i), metric) if (full_mask & ~(1 << i))
                       in e.index else np.nan for i in range(n)])  # fmt: skip
    damage, sets = np.full(n + 1, np.nan), [None] * (n + 1)
    in_opt = np.zeros(n, dtype=int)
    for k in range(n + 1):
        rows = np.flatnonzero(sizes == n - k)
        if not len(rows):
            continue
        best = rows[np.argmin(e.values[metric][rows])]
        damage[k] = m_all - e.values[metric][best]
        masked = full_mask & ~int(e.masks[best])
        sets[k] = heads_of(masked, e.n_heads, n)
        if 0 < k < n:
            in_opt += np.array([(masked >> i) & 1 for i in range(n)])
    return GroundTruth(e.kind, e.n_layers, e.n_heads, m_all, m_none, minimum,
                       [float(f[i]) for i in ties], single, damage, sets, in_opt,
                       e.complete)  # fmt: skip
