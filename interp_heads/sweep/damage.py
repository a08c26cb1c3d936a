"""``damage_matched``: the largest k at which random heads still leave the task mostly intact.

The Cognitive Mirrors figure judges TopK at fixed k; on a small model random heads already break
the task at those k, so TopK and RandomK both collapse and nothing separates them. The
damage-matched k is the largest k of a sweep's grid at which RandomK (mean over its draws and
examples) keeps at least :data:`KEEP` of the unmasked score: the k where masking *random* heads
costs at most 20%, so that a collapse under TopK there is the heads' doing. It is read off the
sweep's own records (a RandomK pass over the grid), so it is always one of the grid's k.
"""

from __future__ import annotations

import pandas as pd

from interp_heads.choices import BASELINE

KEEP = 0.8  # RandomK keeps at least this share of the unmasked score
RANDOM = "RandomK"


def damage_matched_k(records: pd.DataFrame, task: str, metric: str) -> int | None:
    """The largest k of ``task``'s RandomK conditions whose mean ``metric`` is at least
    ``KEEP`` x the unmasked (baseline) mean; None when no k qualifies, the sweep has no RandomK
    or the unmasked score is not positive (no damage to match)."""
    r = records[(records.task == task) & (records.metric == metric)]
    base = r[r.selection == BASELINE].value.mean()
    rand = r[r.selection == RANDOM].groupby("k").value.mean()
    if rand.empty or not base > 0:
        return None
    kept = rand[rand >= KEEP * base]
    return int(kept.index.max()) if len(kept) else None


def damage_matched(records: pd.DataFrame, metric: str) -> dict[str, int | None]:
    """``{task: damage-matched k}`` for every task of a sweep's records."""
    return {t: damage_matched_k(records, t, metric) for t in dict.fromkeys(records.task)}
