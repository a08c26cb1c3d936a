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
the report marks the task).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import pandas as pd
import torch
from jaxtyping import Float

from interp_heads.attribution.inputs import Batch
from interp_heads.attribution.patching import mean_ablation_scores
from interp_heads.attribution.scores import HeadScores
from interp_heads.heads import Head, all_heads, head_label
from interp_heads.models.tl_compat import HookedTransformer

MIN_SPEARMAN = 0.8  # below it over the verified heads, a ranking is flagged


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


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman rank correlation (average ranks for ties); NaN for fewer than 3 pairs."""
    if len(a) < 3:
        return float("nan")
    x, y = pd.Series(list(a)).rank(), pd.Series(list(b)).rank()
    value = float(x.corr(y))
    return value if math.isfinite(value) else float("nan")


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
    flag = not rho >= MIN_SPEARMAN or confirmed < (len(top) + 1) // 2
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
        "flag": flag,
        "verdict": verdict(len(top), len(heads), confirmed, rho_sample, rho, flag),
        "seconds": round(time.perf_counter() - start, 3),
    }


def verdict(m: int, n: int, confirmed: int, rho_sample: float, rho: float, flag: bool) -> str:
    """One plain sentence, e.g. ``"top 8 confirmed; random sample agrees at 0.93 (all 16: 0.95)"``."""
    top = f"top {m} confirmed" if confirmed == m else f"{confirmed} of top {m} confirmed"
    sample = (
        "random sample too small to rank"
        if math.isnan(rho_sample)
        else f"random sample agrees at {rho_sample:.2f}"
    )
    overall = "n/a" if math.isnan(rho) else f"{rho:.2f}"
    text = f"{top}; {sample} (all {n}: {overall})"
    if flag:
        text += f"; FLAGGED: agreement below {MIN_SPEARMAN} or under half of the top confirmed"
    return text


def _round(x: float) -> float | None:
    return None if math.isnan(x) else round(x, 3)
