"""The plan of a sweep: ``(selection, k, seed, heads)`` per condition of one task, baseline first."""

from __future__ import annotations

from interp_heads.errors import InputError
from interp_heads.interventions.selections import make_selections
from interp_heads.vocab import BASELINE


def plan_conditions(config, ranking, n_layers: int, n_heads: int, task: str, others=()):
    """``[(selection_name, k, seed, heads)]`` for one task, baseline first (``others``: the other
    tasks' rankings, which ``exclusive_topk`` avoids)."""
    sels = make_selections(
        config.selections,
        ranking,
        n_layers,
        n_heads,
        salt=task,
        exclude_top=config.exclude_top,
        others=others,
    )
    plan = [(BASELINE, 0, 0, [])]
    ks = list(config.ks)
    if config.elbow:
        from interp_heads.sweep.elbow import elbow_k

        ks = sorted(set(ks) | {elbow_k(ranking)})
    for k in ks:
        if not 0 < k <= n_layers * n_heads:
            raise InputError(f"k={k} must be in 1..{n_layers * n_heads} (number of heads)")
        for sel in sels:
            for seed in range(config.seeds if sel.random else 1):
                plan.append((sel.display, k, seed, sel.select(k, seed)))
    return plan
