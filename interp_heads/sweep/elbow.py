"""``k = "elbow"``: how many heads to mask, read off a ranking's sorted importances.

The Cognitive Mirrors study masks as many heads as the elbow of each task's sorted importances
(``get_importance.py: find_elbow_point``, used as ``mask_num`` in ``ablation_topk.py``): the
importances sorted from largest to smallest are a curve ``(i, y_i)``; the elbow is the index ``i``
of the point farthest from the straight line through the first and the last point. That index is
the number of heads masked (the heads before the elbow), here at least 1.
"""

from __future__ import annotations

import torch

from interp_heads.errors import InputError


def elbow_index(values) -> int:
    """Index of the point of ``values`` (already sorted) farthest from its first-to-last chord."""
    y = torch.as_tensor(values, dtype=torch.float64).flatten()
    if len(y) < 3:
        return 0
    x = torch.arange(len(y), dtype=torch.float64)
    line = torch.stack([x[-1] - x[0], y[-1] - y[0]])
    line = line / line.norm()
    vecs = torch.stack([x - x[0], y - y[0]], 1)
    proj = (vecs @ line)[:, None] * line[None, :]
    return int((vecs - proj).norm(dim=1).argmax())


def elbow_k(ranking) -> int:
    """The elbow k of a ranking (``HeadScores``): its importances in rank order, at least 1.

    Raises:
        InputError: a ranking without scores (a plain list of heads has no importances).
    """
    if not hasattr(ranking, "importance"):
        raise InputError(
            "k = 'elbow' needs a ranking with scores (HeadScores), not a list of heads"
        )
    order = ranking.top(ranking.n_layers * ranking.n_heads)
    imp = ranking.importance()
    values = [float(imp[layer, head]) for layer, head in order]
    values = [v if v != -float("inf") else min(values) for v in values]  # NaN scores: last
    return max(1, elbow_index(values))
