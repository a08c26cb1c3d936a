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
from dataclasses import dataclass

import pandas as pd

from interp_heads.pipeline.artefacts import Inputs
from interp_heads.pipeline.record import RunRecord
from interp_heads.pipeline.state import Experiment


@dataclass(frozen=True)
class SpecificityOutput:
    """The cross-task drop matrix (``heads/specificity.csv``)."""

    specificity: pd.DataFrame


@dataclass(frozen=True)
class StabilityOutput:
    """The split-half agreement of each task's ranking (``heads/stability.csv``)."""

    stability: pd.DataFrame


def specificity_step(exp: Experiment, inputs: Inputs, record: RunRecord) -> SpecificityOutput:
    """The cross-task drop matrix of the run's rankings on its eval splits."""
    from dataclasses import replace

    from interp_heads.analysis.specificity import cross_task_records, drop_matrix

    start = time.perf_counter()
    cfg = replace(inputs.sweep_config, metrics=["accuracy"], elbow=False)
    accuracy = [m for m in inputs.metrics if m.name == "accuracy"] or None
    records = cross_task_records(
        exp.model,
        inputs.eval_tasks,
        inputs.rankings,
        cfg,
        exp.folder.cross_sweep,
        metrics=accuracy,
        batch_size=exp.config.batch_size,
    )
    matrix = drop_matrix(records)
    exp.folder.write_frame(exp.folder.specificity_csv, matrix)
    record.timings["specificity"] = time.perf_counter() - start
    return SpecificityOutput(matrix)


def stability_step(exp: Experiment, inputs: Inputs, record: RunRecord) -> StabilityOutput:
    """Split-half agreement of each task's ranking, re-ranked on each half."""
    from interp_heads.attribution.stability import split_half

    start, cfg = time.perf_counter(), exp.config
    ks = cfg.stability_ks or inputs.ks
    frames = [
        split_half(exp.model, rank, ks, str(cfg.attribution), batch_size=cfg.batch_size)
        for rank, _ in inputs.splits.values()
    ]
    frame = pd.concat(frames)
    exp.folder.write_frame(exp.folder.stability_csv, frame)
    record.timings["stability"] = time.perf_counter() - start
    return StabilityOutput(frame)
