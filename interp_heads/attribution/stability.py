"""Split-half stability of a ranking: do two disjoint halves of the rank examples pick the same heads?

The rank examples are split into two halves (alternate examples, so both halves span the task).
Agreement is the Jaccard index of the two halves' top-k sets at each k and the Spearman correlation
of their importances. A ranking is flagged *unstable* at k when its halves share less than half of
their top k (Jaccard < :data:`UNSTABLE_JACCARD`): its TopK set then depends on which examples
ranked it.

A verdict needs :data:`MIN_HALF` = 5 examples in each half: below that one example is more than a
fifth of a half's mean, so a single unusual example can move a head into or out of a half's top k
on its own, and the agreement describes those few examples rather than the task. Below it
:func:`verdict` says "too few examples to decide (n = 6, 3 per half)" whatever the Jaccard. The
words are tied to the share of the top k the halves have in common (Jaccard ``J`` = shared /
(2k - shared)): *unstable* below half of it (``J < 1/3``), *stable* from 80% on (``J >= 2/3``),
*partly stable* between.

Every ranking ``attribute_heads`` makes carries its halves at no extra cost: each method's score is
a mean over examples of per-example terms (computed against the same task-level quantities, e.g.
the task mean ablation value or the logit-difference normalisation), so the halves are the means of
those terms over each half (:func:`split_record`, stored as ``provenance["split_half"]``);
:func:`stability_of` compares them at a run's k values. :func:`split_half` instead re-ranks each
half from scratch (each half's own mean ablation value; twice the attribution's cost).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd
import torch
from jaxtyping import Float

from interp_heads.attribution.scores import HeadScores

UNSTABLE_JACCARD = 1 / 3  # |A & B| / |A | B| < 1/3  <=>  the halves share under half their top k
STABLE_JACCARD = 2 / 3  # >= 2/3  <=>  the halves share at least 80% of their top k
MIN_EXAMPLES = 4  # two per half: below it no halves are stored
MIN_HALF = 5  # examples per half for a verdict (module docstring: why)
DEFAULT_KS = (8, 16, 32)  # when a command has no k values of its own (``attribute``)


def split_record(per_example: Float[torch.Tensor, "example layer head"]) -> dict:
    """The two halves' scores (means over alternate examples) as a JSON-ready provenance entry;
    NaN (a head a method did not score) is stored as None."""
    n = int(per_example.shape[0])
    if n < MIN_EXAMPLES:
        return {"n_examples": n, "skipped": f"split-half needs >= {MIN_EXAMPLES} rank examples"}
    halves = [per_example[0::2], per_example[1::2]]
    return {
        "split": "alternate examples (0, 2, 4, ... vs 1, 3, 5, ...), per-example scores",
        "n_examples": n,
        "n_half": [int(h.shape[0]) for h in halves],
        "scores": [
            [[None if x != x else x for x in row] for row in h.mean(0).tolist()] for h in halves
        ],
    }


def interval_record(per_example: Float[torch.Tensor, "example layer head"]) -> dict:
    """Each head's 95% interval of its mean per-example score (Student t over the examples:
    mean +- t(0.975, n - 1) * sd / sqrt(n)), JSON-ready (None where a head has no score or
    fewer than 2 examples): the interval the head explorer shows beside the score."""
    from scipy.stats import t

    n = int(per_example.shape[0])
    if n < 2:
        return {"n_examples": n, "skipped": "an interval needs >= 2 rank examples"}
    mean, sd = per_example.double().mean(0), per_example.double().std(0, unbiased=True)
    half = float(t.ppf(0.975, n - 1)) * sd / math.sqrt(n)
    grid = lambda x: [[None if v != v else round(v, 6) for v in row] for row in x.tolist()]  # noqa: E731
    return {"level": 0.95, "n_examples": n, "method": "t interval over examples",
            "low": grid(mean - half), "high": grid(mean + half)}  # fmt: skip


def halves_of(scores: HeadScores) -> tuple[HeadScores, HeadScores] | None:
    """The two half rankings stored in ``scores.provenance["split_half"]`` (None: absent or
    skipped). They rank by the full ranking's direction, without its refined-first order."""
    rec = scores.provenance.get("split_half") or {}
    if "scores" not in rec:
        return None
    prov = {"rank_by": scores.rank_by}
    return tuple(  # type: ignore[return-value]
        HeadScores(
            torch.tensor([[float("nan") if x is None else x for x in row] for row in half]),
            scores.method,
            scores.task,
            provenance=dict(prov),
        )
        for half in rec["scores"]
    )


def stability_of(scores: HeadScores, ks: Sequence[int]) -> dict:
    """Split-half agreement of a ranking at ``ks`` (those below the number of heads): rank-example
    count, Spearman, Jaccard and shared heads per k, and the k values flagged unstable."""
    rec = scores.provenance.get("split_half") or {}
    pair = halves_of(scores)
    if pair is None:
        return {"n_examples": rec.get("n_examples"), "skipped": rec.get("skipped", "no halves")}
    n_total = scores.n_layers * scores.n_heads
    ks = sorted({int(k) for k in ks if 0 < int(k) < n_total}) or [max(1, n_total // 4)]
    frame = agreement(*pair, ks, scores.task)
    return {
        "n_examples": rec["n_examples"],
        "n_half": rec["n_half"],
        "spearman": round(float(frame.spearman.iloc[0]), 4),
        "jaccard": {str(r.k): round(float(r.jaccard), 4) for r in frame.itertuples()},
        "shared": {str(r.k): int(r.shared) for r in frame.itertuples()},
        "unstable": [int(r.k) for r in frame.itertuples() if r.unstable],
        **({"too_few": too_few(rec["n_half"])} if too_few(rec["n_half"]) else {}),
    }


def too_few(n_half: Sequence[int]) -> str | None:
    """Why halves of these sizes cannot decide stability (None: they can)."""
    if min(int(n) for n in n_half) >= MIN_HALF:
        return None
    sizes = "/".join(str(int(n)) for n in n_half)
    return (
        f"too few examples to decide (n = {sum(int(n) for n in n_half)}, {sizes} per half; "
        f"{MIN_HALF} per half needed)"
    )


def verdict(entry: dict, k: int | str) -> str:
    """The words for one k of a :func:`stability_of` entry: too few to decide, unstable, partly
    stable or stable, with the number of top-k heads the halves share."""
    if "jaccard" not in entry:
        return str(entry.get("skipped", "not measured"))
    few = entry.get("too_few") or (too_few(entry["n_half"]) if entry.get("n_half") else None)
    if few:  # also for entries stored before the rule
        return few
    j, shared = float(entry["jaccard"][str(k)]), entry["shared"][str(k)]
    word = (
        "unstable" if j < UNSTABLE_JACCARD else "stable" if j >= STABLE_JACCARD else "partly stable"
    )
    return f"{word}: the halves share {shared} of their top {k}"


def spearman(a: HeadScores | Sequence[float], b: HeadScores | Sequence[float]) -> float:
    """Spearman rank correlation (average ranks for ties) of two rankings' importances or of two
    equal-length score sequences; NaN for fewer than 3 pairs or a constant side."""
    x, y = (
        v.importance().flatten().tolist() if isinstance(v, HeadScores) else list(v) for v in (a, b)
    )
    if len(x) < 3:
        return float("nan")
    value = float(pd.Series(x).rank().corr(pd.Series(y).rank()))
    return value if math.isfinite(value) else float("nan")


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
