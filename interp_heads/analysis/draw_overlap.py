"""How many of the task's own top heads each random draw of a run masks, and whether that predicts
the draw's score.

A RandomK control drawn from every head (``exclude_top = false``) can hold some of the heads the
ranking puts first; a draw that masks them damages the task for the reason TopK does, and the
control then drops more than random heads should. :func:`draw_overlap` reads a finished run
folder (its ``ranking.csv`` and its stored conditions, ``conditions/*.json``) and gives one row
per RandomK draw: task, k, seed, the draw's mean score and how many of the task's top ``t`` heads
it holds, for each ``t`` of ``tops``. :func:`overlap_correlation` is, per task, the correlation
over all k and draws of the score with the top heads held.

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
    ranking = read_csv(folder.ranking_csv)
    display = SELECTIONS.get("randomk").display
    rows = []
    for name in sorted(folder.listed("conditions")):
        entry = read_entry(RunFolder.condition_entry_in(folder.conditions, name), CONDITION_SCHEMA)
        if entry is None or entry["selection"] != display:
            continue
        if metric not in entry["scores"]:
            raise InputError(f"{os.fspath(run_dir)}: its draws were not scored with {metric!r}")
        order = ranking[ranking.task == entry["task"]].sort_values("rank").label.tolist()
        values = entry["scores"][metric]
        row = {"task": entry["task"], "k": entry["k"], "seed": entry["seed"],
               metric: sum(values) / len(values)}  # fmt: skip
        held = set(entry["heads"])
        rows.append(row | {f"top{t}_held": len(held & set(order[:t])) for t in tops})
    if not rows:
        raise InputError(f"{os.fspath(run_dir)}: no RandomK draws stored")
    return pd.DataFrame(rows).sort_values(["task", "k", "seed"], ignore_index=True)


def overlap_correlation(frame: pd.DataFrame, top: int = 16, metric: str = "accuracy") -> pd.Series:
    """Per task, the Pearson correlation over all k and draws of ``metric`` with the number of the
    task's top ``top`` heads a draw holds (NaN where either is constant)."""
    return pd.Series(
        {task: g[metric].corr(g[f"top{top}_held"]) for task, g in frame.groupby("task")},
        name=f"corr({metric}, top{top}_held)",
    )
