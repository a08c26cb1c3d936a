"""What ``mask_heads`` accepts as its heads, checked strictly before any hook is attached.

Heads are ``(layer, head)`` pairs of integers, ``"L{l}H{h}"`` labels, a comma-separated string of
labels, or a ranking: a ``HeadScores`` together with ``k`` (its top ``k`` heads, as
``scores.top(k)`` gives them). A head listed twice, a float or a bool layer or head is refused:
each would be masked once but read as something else (k counted twice, ``2.7`` -> 2,
``True`` -> 1).
"""

from __future__ import annotations

import operator

from interp_heads.errors import InputError
from interp_heads.heads import Head, head_label, parse_heads


def _is_ranking(heads) -> bool:
    return hasattr(heads, "top") and hasattr(heads, "scores")


def _strict_int(x) -> bool:
    if isinstance(x, bool) or "bool" in str(getattr(x, "dtype", "")):
        return False
    try:
        operator.index(x)
    except TypeError:
        return False
    return True


def mask_targets(heads, n_layers: int, n_heads: int, k: int | None = None) -> list[Head]:
    """``heads`` as ``[(layer, head), ...]`` in the given order; InputError naming the bad item."""
    if _is_ranking(heads):
        if k is None:
            raise InputError(
                "heads is a HeadScores: say how many of its top heads to mask with k= "
                "(mask_heads(model, scores, k=16)), or pass scores.top(16)"
            )
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise InputError(f"k must be an integer >= 0, got {k!r}")
        heads = heads.top(k)
    elif k is not None:
        raise InputError("k= picks the top heads of a HeadScores; heads is already a list of heads")
    if isinstance(heads, str):
        heads = [s for s in heads.split(",") if s.strip()]
    try:
        items = list(heads)
    except TypeError:
        raise InputError(
            f"heads must be a list of (layer, head) pairs or 'L3H2' labels, or a HeadScores with "
            f"k=, got {type(heads).__name__}"
        ) from None
    for i, item in enumerate(items):
        if isinstance(item, str):
            continue
        try:
            pair = tuple(item)
        except TypeError:
            pair = ()
        if len(pair) != 2 or not all(_strict_int(x) for x in pair):
            raise InputError(
                f"heads[{i}] = {item!r}: expected a (layer, head) pair of integers or a label "
                "such as 'L3H2'"
            )
    parsed = parse_heads(
        [x if isinstance(x, str) else tuple(operator.index(v) for v in x) for x in items],
        n_layers,
        n_heads,
    )
    seen: set[Head] = set()
    for head in parsed:
        if head in seen:
            raise InputError(f"heads lists {head_label(*head)} twice")
        seen.add(head)
    return parsed
