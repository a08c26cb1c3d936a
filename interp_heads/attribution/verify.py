"""How far can a ranking be trusted? Its top heads and a random sample, checked against the exact effect.

Every attribution is an estimate; the sweep then masks heads by mean-ablating their ``hook_z``. With
``verify=m`` the ranking is checked against exactly that intervention: the exact drop of log
p(answer's first token) under mean ablation (``mean_ablation_scores(..., objective="logprob")``) is
measured for the ranking's top ``m`` heads and for ``m`` heads drawn at random (seeded) from the
rest, about ``2m / n_heads`` of exact mean ablation's cost. Heads whose exact drop the ranking
already holds (``exact_layers``, ``refine`` of ``ablation_atp``) are not measured again.

The result says, in numbers and in one plain sentence, how many of the top heads are confirmed
(their exact drop exceeds that of every randomly drawn head), how well the ranking orders the
random sample and all verified heads (Spearman of the ranking's order with the exact drops), and
whether that agreement is below :data:`MIN_SPEARMAN` (then ``flag`` is set, the pipeline warns and
the report marks the task). The verdict judges the top *set* (confirmed when at least half of the
top heads drop more than every random head) and its *order* (Spearman over all verified heads)
apart, so "7 of the top 8 confirmed" and "order not confirmed" can stand side by side.

A verdict needs :data:`MIN_VERIFY` = 5 heads at the top and in the sample: the exact Spearman test
over ``m`` heads cannot give a two-sided p below ``2 / m!`` (0.083 at 4 heads, 0.017 at 5), so
with fewer an order cannot be confirmed or refuted; the verdict then says "too few heads to
decide" and nothing is flagged.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import torch
from jaxtyping import Float

from interp_heads.attribution.inputs import Batch
from interp_heads.attribution.patching import mean_ablation_scores
from interp_heads.attribution.scores import HeadScores
from interp_heads.attribution.stability import spearman
from interp_heads.heads import Head, all_heads, head_label
from interp_heads.models.tl_compat import HookedTransformer

MIN_SPEARMAN = 0.8  # below it over the verified heads, a ranking is flagged
MIN_VERIFY = 5  # heads at the top and in the random sample for a verdict (module docstring)


class VerificationWarning(UserWarning):
    """A ranking agrees poorly with the exact effect of the sweep's intervention."""


def known_exact(scores: HeadScores) -> Float[torch.Tensor, "layer head"]:
    """The exact mean-ablation log-prob drops a ranking already holds (NaN elsewhere)."""
    known = torch.full_like(scores.scores, float("nan"))
    prov = scores.provenance
    if not _estimates_mean_ablation(scores.method) or prov.get("ablation") != "mean":
        return known
    layers = int(prov.get("exact_layers") or 0)
    known[:layers] = scores.scores[:layers]
    if "+mean_ablation@" in scores.method and scores.refined is not None:
        known[scores.refined] = scores.scores[scores.refined]
    return known


def _estimates_mean_ablation(method: str) -> bool:
    """Whether a ranking's method (``name`` or ``name+refinement@k``) is confirmed by mean ablation."""
    from interp_heads.attribution.methods import METHODS

    base = method.split("+")[0]
    return base in METHODS and METHODS.get(base).refine_with == "mean_ablation"


def pick_heads(scores: HeadScores, m: int, seed: int = 0) -> tuple[list[Head], list[Head]]:
    """The ranking's top ``m`` heads and ``m`` heads drawn at random (seeded) from the others."""
    top = scores.top(m)
    rest = [h for h in all_heads(scores.n_layers, scores.n_heads) if h not in set(top)]
    gen = torch.Generator().manual_seed(seed)
    pick = sorted(torch.randperm(len(rest), generator=gen)[: min(m, len(rest))].tolist())
    return top, [rest[i] for i in pick]


@torch.no_grad()
def verify_ranking(
    model: HookedTransformer,
    batches: Sequence[Batch],
    scores: HeadScores,
    m: int,
    *,
    seed: int = 0,
    max_rows: int = 128,
    known: Float[torch.Tensor, "layer head"] | None = None,
) -> dict:
    """Check ``scores``' top ``m`` heads and ``m`` random others by their exact mean-ablation drop.

    Args:
        model: the model the ranking was made on.
        batches: the examples it was made on (the task means are taken over them, as the sweep's).
        scores: the ranking; its own order (``scores.rank()``) is what is checked.
        m: heads at the top and in the random sample.
        seed: seeds the random sample.
        max_rows: as in :func:`mean_ablation_scores`.
        known: exact drops already measured (NaN where not); default :func:`known_exact`.

    Returns:
        A JSON-ready dict: ``m``, ``top`` and ``sample`` (per head: label, score, rank, exact),
        ``top_confirmed``, ``spearman_sample``, ``spearman``, ``flag``, ``verdict``, ``seconds``.
    """
    start = time.perf_counter()
    top, sample = pick_heads(scores, m, seed)
    exact = (known if known is not None else known_exact(scores)).clone()
    todo = [h for h in top + sample if math.isnan(float(exact[h]))]
    if todo:
        measured, _ = mean_ablation_scores(
            model, batches, heads=todo, max_rows=max_rows, objective="logprob"
        )
        for h in todo:
            exact[h] = measured[h]
    order = (-scores.rank()).float()  # larger = ranked higher

    def rows(heads):
        return [
            {
                "head": head_label(*h),
                "score": float(scores.scores[h]),
                "rank": int(-order[h]),
                "exact": round(float(exact[h]), 5),
            }
            for h in heads
        ]

    heads = top + sample
    rho_sample = spearman([float(order[h]) for h in sample], [float(exact[h]) for h in sample])
    rho = spearman([float(order[h]) for h in heads], [float(exact[h]) for h in heads])
    floor = max((float(exact[h]) for h in sample), default=-math.inf)
    confirmed = sum(float(exact[h]) > floor for h in top)
    enough = min(len(top), len(sample)) >= MIN_VERIFY
    weak_set, weak_order = confirmed < (len(top) + 1) // 2, not rho >= MIN_SPEARMAN
    return {
        "m": m,
        "seed": seed,
        "metric": "exact drop of log p(answer's first token) under mean ablation",
        "top": rows(top),
        "sample": rows(sample),
        "measured": len(todo),
        "top_confirmed": confirmed,
        "spearman_sample": _round(rho_sample),
        "spearman": _round(rho),
        "min_spearman": MIN_SPEARMAN,
        "flag": enough and (weak_set or weak_order),
        "verdict": verdict(len(top), len(sample), confirmed, rho_sample, rho),
        "seconds": round(time.perf_counter() - start, 3),
    }


def verdict(m: int, n_sample: int, confirmed: int, rho_sample: float, rho: float) -> str:
    """Plain words on the top set and on its order, judged apart, e.g. ``"top set confirmed: 7 of
    the top 8 drop more than every random head; order NOT confirmed: Spearman 0.55 over all 16
    verified heads (below 0.8; within the random sample 0.98)"``."""
    n = m + n_sample
    if min(m, n_sample) < MIN_VERIFY:
        return (
            f"too few heads to decide (top {m}, {n_sample} random; {MIN_VERIFY} of each needed): "
            f"{confirmed} of the top {m} drop more than every random head"
        )
    head_set = (
        f"top set {'NOT ' * (confirmed < (m + 1) // 2)}confirmed: {confirmed} of the top {m} "
        "drop more than every random head"
    )
    sample = "n/a" if math.isnan(rho_sample) else f"{rho_sample:.2f}"
    if math.isnan(rho):
        return f"{head_set}; order not measurable (constant exact drops)"
    ok = rho >= MIN_SPEARMAN
    order = (
        f"order {'confirmed' if ok else 'NOT confirmed'}: Spearman {rho:.2f} over all {n} "
        f"verified heads ({'at least' if ok else 'below'} {MIN_SPEARMAN}; within the random "
        f"sample {sample})"
    )
    return f"{head_set}; {order}"


def _round(x: float) -> float | None:
    return None if math.isnan(x) else round(x, 3)
