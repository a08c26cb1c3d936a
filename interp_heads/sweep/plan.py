"""The plan of a sweep: ``(selection, k, seed, heads)`` per condition of one task, baseline first."""

from __future__ import annotations

from interp_heads.choices import BASELINE
from interp_heads.errors import InputError
from interp_heads.interventions.selections import SELECTIONS, make_selections


def plan_conditions(config, ranking, n_layers: int, n_heads: int, task: str, others=()):
    """``[(selection_name, k, seed, heads)]`` for one task, baseline first (``others``: the other
    tasks' rankings, which ``exclusive_topk`` avoids).

    ``heads`` are the heads masked. A kept-set selection (``Selection.kept``) counts the heads it
    keeps in k, so k = 0 is a condition of its own (every head masked) and is planned for the
    kept-set selections only (a masked-set selection at k = 0 is the baseline)."""
    sels = make_selections(
        config.selections,
        ranking,
        n_layers,
        n_heads,
        salt=task,
        options=config.declared_by(SELECTIONS),
        others=others,
    )
    plan = [(BASELINE, 0, 0, [])]
    ks = list(config.ks)
    if config.elbow:
        from interp_heads.sweep.elbow import elbow_k

        ks = sorted(set(ks) | {elbow_k(ranking)})
    low = 0 if any(sel.kept for sel in sels) else 1
    for k in ks:
        if not low <= k <= n_layers * n_heads:
            raise InputError(f"k={k} must be in {low}..{n_layers * n_heads} (number of heads)")
        for sel in sels:
            if k == 0 and not sel.kept:
                continue
            for seed in range(config.seeds if sel.random else 1):
                plan.append((sel.display, k, seed, sel.select(k, seed)))
    return plan
