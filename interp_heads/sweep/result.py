"""``SweepResult``: per-example scores and generations of every condition, with summaries."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from interp_heads.sweep.config import SweepConfig
from interp_heads.sweep.stats import significance, summarize


@dataclass
class SweepResult:
    """Per-example scores of every condition, with generations, plus the config."""

    records: pd.DataFrame  # task, selection, seed, k, metric, label, example_id, value
    generations: pd.DataFrame  # task, selection, seed, k, example_id, heads, generation
    config: SweepConfig
    timings: dict = field(default_factory=dict)
    metric_cache: dict = field(
        default_factory=dict
    )  # MetricCache.stats(): look-ups, scored, hit_rate
    prompts: dict = field(default_factory=dict)  # task -> {example id: the prompt as rendered}
    shared: dict | None = None  # SharedGenerations.stats: conditions read back and generated

    def __repr__(self) -> str:
        """One line: tasks, conditions, records, ks, selections and metrics (not the tables)."""
        r = self.records
        conditions = r[["task", "selection", "k", "seed"]].drop_duplicates() if len(r) else r
        return (
            f"SweepResult(tasks={list(dict.fromkeys(r.get('task', [])))}, "
            f"{len(conditions)} conditions, {len(r)} records, ks={self.config.ks}, "
            f"selections={list(dict.fromkeys(r.get('selection', [])))}, "
            f"metrics={list(dict.fromkeys(r.get('metric', [])))})"
        )

    def to_frame(self) -> pd.DataFrame:
        return self.records

    def summary(self, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
        """Mean and 95% CI per task, selection, k and metric (see ``interp_heads.sweep.stats``)."""
        return summarize(self.records, n_boot=n_boot, seed=seed)

    def significance(self, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
        """TopK minus each random control per task, k and metric: 95% CI and p-value."""
        return significance(self.records, n_boot=n_boot, seed=seed)

    def figure(self, **kwargs):
        from interp_heads.figures.curves import plot_sweep

        return plot_sweep(self.summary(), **kwargs)

    def _repr_html_(self) -> str:
        """A notebook cell shows the summary table and the Cognitive Mirrors figure (``interp_heads.figures.notebook``)."""
        from interp_heads.figures.notebook import sweep_html

        return sweep_html(self)
