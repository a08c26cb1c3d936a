"""How many of the task's own top heads each random draw of a run masks, and whether that predicts
the draw's score.

A RandomK control drawn from every head (``exclude_top = false``) can hold some of the heads the
ranking puts first; a draw that masks them damages the task for the reason TopK does, and the
control then drops more than random heads should. :func:`draw_overlap` reads a finished run
folder (its ``ranking.csv`` and its stored conditions, ``conditions/*.json``) and gives one row
per RandomK draw: task, k, seed, the draw's mean score and how many of the task's top ``t`` heads
it holds, for each ``t`` of ``tops``. :func:`overlap_correlation` is, per task, the correlation
of the score with the top heads held, over all k and draws or within each k: a larger draw both
masks more heads and holds more top heads, so the correlation over all k is partly k itself;
within k (each draw's score and count less their k's mean, pooled) it is the overlap alone.

    from interp_heads.analysis.draw_overlap import draw_overlap, overlap_correlation
    frame = draw_overlap("runs/plain_control")
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import pandas as pd

from interp_heads.errors import InputError

TOPS = (8, 16)


def draw_overlap(
    run_dir: str | os.PathLike, tops: Sequence[int] = TOPS, metric: str = "accuracy"
) -> pd.DataFrame:
    """One row per RandomK draw of the run folder ``run_dir``: ``task``, ``k``, ``seed``,
    ``metric`` (the draw's mean score) and ``top{t}_held`` for each ``t`` of ``tops``.

    Raises:
        InputError: not a finished run folder with a ranking and RandomK conditions, or the
            draws were not scored with ``metric``.
    """
    from interp_heads.interventions.selections import SELECTIONS
    from interp_heads.store import read_entry
    from interp_heads.store.conditions import CONDITION_SCHEMA
    from interp_heads.store.folder import RunFolder
    from interp_heads.store.readback import read_csv

    folder = RunFolder(run_dir)
    if not folder.ranking_csv.exists():
        raise InputError(f"{os.fspath(run_dir)}: no ranking.csv (not a finished run folder)")
    ranking = read_csv(folder.ranking_csv).sort_values("rank")
    order = {task: list(g.label) for task, g in ranking.groupby("task", sort=False)}
    display = SELECTIONS.get("randomk").display
    rows = []
    for name in sorted(folder.listed("conditions")):
        entry = read_entry(RunFolder.condition_entry_in(folder.conditions, name), CONDITION_SCHEMA)
        if entry is None or entry["selection"] != display:
            continue
        if metric not in entry["scores"]:
            raise InputError(f"{os.fspath(run_dir)}: its draws were not scored with {metric!r}")
        top = order.get(entry["task"], [])
        values = entry["scores"][metric]
        row = {"task": entry["task"], "k": entry["k"], "seed": entry["seed"],
               metric: sum(values) / len(values)}  # fmt: skip
        held = set(entry["heads"])
        rows.append(row | {f"top{t}_held": len(held & set(top[:t])) for t in tops})
    if not rows:
        raise InputError(f"{os.fspath(run_dir)}: no RandomK draws stored")
    return pd.DataFrame(rows).sort_values(["task", "k", "seed"], ignore_index=True)


def overlap_correlation(
    frame: pd.DataFrame, top: int = 16, metric: str = "accuracy", within_k: bool = False
) -> pd.Series:
    """Per task, the Pearson correlation of ``metric`` with the number of the task's top ``top``
    heads a draw holds, over all k and draws, or (``within_k``) of their deviations from their
    k's means, pooled over k (NaN where either is constant)."""
    held = f"top{top}_held"

    def corr(g: pd.DataFrame) -> float:
        x, y = g[metric], g[held]
        if within_k:
            x = x - g.groupby("k")[metric].transform("mean")
            y = y - g.groupby("k")[held].transform("mean")
        return float(x.corr(y))

    return pd.Series(
        {task: corr(g) for task, g in frame.groupby("task")},
        name=f"corr({metric}, {held}){' within k' if within_k else ''}",
        dtype=float,
    )
