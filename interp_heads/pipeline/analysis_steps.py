"""Which-heads steps a run adds after its tables (``analyses = [...]``; ``make heads``).

- ``specificity``: every task's TopK mean-ablated while every task generates (one resumable
  sweep per source task under ``heads/cross/``); the drop of each task's accuracy with its 95%
  interval (``analysis.specificity.drop_matrix``) in ``heads/specificity.csv``.
- ``stability``: each task's rank examples split into alternate halves, each ranked with the
  run's attribution method, compared at ``stability_ks`` (``attribution.stability.split_half``)
  in ``heads/stability.csv``.

Both read the rankings and splits the run's earlier steps made, and the report shows them.
"""

from __future__ import annotations

import time

import pandas as pd

from interp_heads.pipeline.state import Experiment


def specificity_step(exp: Experiment) -> pd.DataFrame:
    """The cross-task drop matrix of the run's rankings on its eval splits."""
    from dataclasses import replace

    from interp_heads.analysis.specificity import cross_task_records, drop_matrix

    start = time.perf_counter()
    cfg = replace(exp.sweep_config, metrics=["accuracy"], elbow=False)
    accuracy = [m for m in exp.metrics if m.name == "accuracy"] or None
    records = cross_task_records(
        exp.model,
        exp.eval_tasks,
        exp.rankings,
        cfg,
        exp.folder.cross_sweep,
        metrics=accuracy,
        batch_size=exp.batch_size,
    )
    matrix = drop_matrix(records)
    exp.folder.write_frame(exp.folder.specificity_csv, matrix)
    exp.timings["specificity"] = time.perf_counter() - start
    return matrix


def stability_step(exp: Experiment) -> pd.DataFrame:
    """Split-half agreement of each task's ranking, re-ranked on each half."""
    from interp_heads.attribution.stability import split_half

    start = time.perf_counter()
    ks = exp.config.stability_ks or exp.ks
    frames = [
        split_half(exp.model, rank, ks, str(exp.config.attribution), batch_size=exp.batch_size)
        for rank, _ in exp.splits.values()
    ]
    frame = pd.concat(frames)
    exp.folder.write_frame(exp.folder.stability_csv, frame)
    exp.timings["stability"] = time.perf_counter() - start
    return frame
