"""Split-half stability of a ranking: do two disjoint halves of the rank examples pick the same heads?

The rank examples are split into two halves (alternate examples, so both halves span the task);
each half ranks the heads with the same attribution settings. Agreement is the Jaccard index of the
two top-k sets at each k and the Spearman correlation of the two full rankings' importances. A
ranking is flagged *unstable* at k when its halves share less than half of their top k
(Jaccard < :data:`UNSTABLE_JACCARD`): its TopK set then depends on which examples ranked it.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from interp_heads.attribution.scores import HeadScores

UNSTABLE_JACCARD = 1 / 3  # |A & B| / |A | B| < 1/3  <=>  the halves share under half their top k


def spearman(a: HeadScores, b: HeadScores) -> float:
    """Spearman correlation of two rankings' importances (average ranks for ties)."""
    x = pd.Series(a.importance().flatten().tolist())
    y = pd.Series(b.importance().flatten().tolist())
    return float(x.rank().corr(y.rank()))


def jaccard(a: HeadScores, b: HeadScores, k: int) -> float:
    """Jaccard index of the two top-k head sets."""
    sa, sb = set(a.top(k)), set(b.top(k))
    return len(sa & sb) / len(sa | sb)


def agreement(a: HeadScores, b: HeadScores, ks: Sequence[int], task: str = "") -> pd.DataFrame:
    """One row per k: task, k, jaccard, shared (heads in both top k), spearman, unstable."""
    rho = spearman(a, b)
    rows = []
    for k in ks:
        j = jaccard(a, b, k)
        rows.append(
            {
                "task": task or a.task,
                "k": k,
                "jaccard": j,
                "shared": len(set(a.top(k)) & set(b.top(k))),
                "spearman": rho,
                "unstable": j < UNSTABLE_JACCARD,
            }
        )
    return pd.DataFrame(rows)


def split_half(
    model, task, ks: Sequence[int], method: str = "auto", **attribute_kw
) -> pd.DataFrame:
    """Rank ``task`` on each half of its examples and compare (:func:`agreement`); the frame also
    gives the number of rank examples (``n_examples``) and per half (``n_half``).

    Raises:
        ValueError: fewer than 4 examples (halves of one example say nothing).
    """
    from interp_heads.attribution import attribute_heads

    if len(task) < 4:
        raise ValueError(f"split-half stability needs >= 4 rank examples, task has {len(task)}")
    ids = [e.id for e in task]
    halves = [task.subset(ids=ids[0::2]), task.subset(ids=ids[1::2])]
    a, b = (attribute_heads(model, h, method, **attribute_kw) for h in halves)
    frame = agreement(a, b, ks, task.name)
    frame["n_examples"], frame["n_half"] = len(task), len(halves[1])
    frame["method"] = a.method
    return frame
