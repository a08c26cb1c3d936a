"""A ranking and a found head set scored against the truth (``zoo.ground``).

- ROC AUC of a ranking against the true necessary heads: the probability that a positive head
  ranks above a negative one, ties counting one half (Mann-Whitney U over the pairs).
- Precision and recall at k: of the ranking's top k, the share that is positive; of the
  positives, the share in the top k (k = the true minimum's size by default).
- TopK's damage as a share of the optimal k-set's (``m(all) - m(all but A)``, exact, from the
  enumeration).
- A found sufficient set: its size over the true minimum (heads over), f of the set on the
  enumerated prompts, and whether it is 1-minimal (no single head can be removed with f staying
  at the target).
- CPR and CMD (``analysis.sufficiency.mib_area``) of the ranking's kept prefixes and of the
  optimal kept set of each size, both exact from the enumeration.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from interp_heads.errors import InputError
from interp_heads.heads import Head
from interp_heads.zoo.ground import TARGET, GroundTruth, faithfulness, mask_of
from interp_heads.zoo.truth import Enumeration


def roc_auc(scores, labels) -> float:
    """ROC AUC of ``scores`` (higher: more likely positive) against boolean ``labels``: the share
    of (positive, negative) pairs the scores order right, a tie counting one half. NaN when a
    class is empty."""
    s, y = np.asarray(scores, dtype=float), np.asarray(labels, dtype=bool)
    if len(s) != len(y):
        raise InputError(f"roc_auc: {len(s)} scores, {len(y)} labels")
    pos, neg = s[y], s[~y]
    if not len(pos) or not len(neg):
        return float("nan")
    above = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(above / (len(pos) * len(neg)))


def rank_scores(ranking: Sequence[Head], n_heads: int, n_total: int) -> np.ndarray:
    """Flat per-head scores from a ranking (most important first): ``n_total - position``."""
    out = np.zeros(n_total)
    if len(set(ranking)) != len(ranking) or len(ranking) != n_total:
        raise InputError(f"a ranking of every head once is needed, got {len(ranking)} entries")
    for pos, (layer, head) in enumerate(ranking):
        out[layer * n_heads + head] = n_total - pos
    return out


def precision_recall_at(ranking: Sequence[Head], positives: np.ndarray, n_heads: int,
                        k: int) -> tuple[float, float]:  # fmt: skip
    top = {layer * n_heads + head for layer, head in ranking[:k]}
    hits = sum(bool(positives[i]) for i in top)
    n_pos = int(positives.sum())
    return hits / k if k else float("nan"), hits / n_pos if n_pos else float("nan")


def topk_damage_share(e: Enumeration, truth: GroundTruth, ranking: Sequence[Head], k: int,
                      metric: str = "logprob") -> float:  # fmt: skip
    """TopK's damage over the optimal k-set's (NaN where the optimum does no damage)."""
    full = (1 << e.n_total) - 1
    kept = full & ~mask_of(ranking[:k], e.n_heads)
    if kept not in e.index or not truth.optimal_damage[k] > 0:
        return float("nan")
    return (truth.m_all - e.value(kept, metric)) / float(truth.optimal_damage[k])


def set_faithfulness(e: Enumeration, heads: Sequence[Head], metric: str = "logprob") -> float:
    f = faithfulness(e, metric)
    mask = mask_of(heads, e.n_heads)
    return float(f[e.index[mask]]) if mask in e.index else float("nan")


def one_minimal(e: Enumeration, heads: Sequence[Head], target: float = TARGET,
                metric: str = "logprob") -> bool | None:  # fmt: skip
    """Whether the set keeps f >= target and no set one head smaller does (None: a smaller set
    was not enumerated)."""
    f = faithfulness(e, metric)
    mask = mask_of(heads, e.n_heads)
    if mask not in e.index:
        return None
    smaller = [mask & ~(1 << i) for i in range(e.n_total) if (mask >> i) & 1]
    if any(s not in e.index for s in smaller):
        return None
    return bool(f[e.index[mask]] >= target) and all(f[e.index[s]] < target for s in smaller)


def curve_areas(e: Enumeration, ranking: Sequence[Head], metric: str = "logprob") -> dict:
    """CPR and CMD of the ranking's kept prefixes and of the optimal kept set of each size."""
    from interp_heads.analysis.sufficiency import mib_area, mib_ks

    f, sizes, n = faithfulness(e, metric), e.sizes, e.n_total
    ks = set(mib_ks(n))
    prefix = {k: float(f[e.index[mask_of(ranking[:k], e.n_heads)]]) for k in ks
              if mask_of(ranking[:k], e.n_heads) in e.index}  # fmt: skip
    best = {k: float(np.nanmax(f[sizes == k])) for k in ks if (sizes == k).any()}
    out = {}
    for name, f_at in (("ranking", prefix), ("optimal", best)):
        whole = set(f_at) == ks
        out[f"cpr_{name}"] = float(mib_area(f_at, n)) if whole else float("nan")
        out[f"cmd_{name}"] = float(mib_area(f_at, n, from_one=True)) if whole else float("nan")
    return out


def score_ranking(e: Enumeration, truth: GroundTruth, ranking: Sequence[Head],
                  metric: str = "logprob") -> dict:  # fmt: skip
    """Every ranking measure of the module docstring, at k = the true minimum's size."""
    pos = truth.necessary
    k = truth.min_size
    p, r = precision_recall_at(ranking, pos, e.n_heads, k)
    return {
        "roc_auc": roc_auc(rank_scores(ranking, e.n_heads, e.n_total), pos),
        "k": k, "precision_at_k": p, "recall_at_k": r,
        "topk_damage_share": topk_damage_share(e, truth, ranking, k, metric),
        **curve_areas(e, ranking, metric),
    }  # fmt: skip
