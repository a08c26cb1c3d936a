"""How many heads a task needs, from Python: :func:`sufficiency` and its :class:`SufficiencyResult`.

``interp_heads.sufficiency(model, task)`` ranks the task's heads (or takes a ranking), runs one
resumable sweep of kept sets on the :func:`~interp_heads.analysis.sufficiency.kept_grid` (TopK
kept, k random heads kept, TopK masked; the unmasked model and the all-ablated model as the two
ends) and returns a tidy result: ``.curves()`` (faithfulness per k), ``.summary()`` (CPR, CMD,
necessity area, minimal k), ``.verdicts()`` (plain words) and ``.figure()``. The run's
``sufficiency = true`` switch does the same in the pipeline (``pipeline.sufficiency_step``).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd

from interp_heads.analysis.sufficiency import (
    SELECTIONS,
    areas,
    faithfulness_curves,
    kept_grid,
    minimal_sets,
    verdicts,
)
from interp_heads.interventions.selections import ranked_heads
from interp_heads.tasks.prompt_format import FormatWarning, check_same_format, task_format

DEFAULT_METRICS = ("accuracy", "answer_logprob", "kl_unmasked")


@dataclass
class SufficiencyResult:
    """A kept-set sweep's records and what they say (computed on first use, then kept).

    ``records``: the sweep's per-example rows; ``n_total``: the model's heads; ``run_ks``: the
    k the verdicts speak of; ``rankings``: ``{task: heads, most important first}``.
    """

    records: pd.DataFrame
    n_total: int
    run_ks: list[int] = field(default_factory=list)
    rankings: dict = field(default_factory=dict)
    n_boot: int = 1000
    _cache: dict = field(default_factory=dict, repr=False)

    def _curves(self):
        if "curves" not in self._cache:
            self._cache["curves"] = faithfulness_curves(
                self.records, self.n_total, self.run_ks, self.n_boot
            )
        return self._cache["curves"]

    def curves(self) -> pd.DataFrame:
        """Faithfulness per task, metric, curve (ranking, random, necessity) and k."""
        return self._curves()[0]

    def minimal(self, metric: str = "accuracy") -> pd.DataFrame:
        """The minimal head set per task (ranking and random kept sets), with its interval."""
        return minimal_sets(self.records, metric, self.rankings, self.n_boot, n_total=self.n_total)

    def summary(self) -> pd.DataFrame:
        """One row per task, metric, curve and measure (``cpr``, ``cmd``, ``necessity_area``,
        ``minimal_k``): value and 95% interval (a minimal k row also says whether a set below
        every head was ``found``, the largest k ``tested`` below it and ``n_examples``)."""
        curves, reps = self._curves()
        frame = areas(curves, reps, self.n_total)
        m = self.minimal() if "accuracy" in set(self.records.metric) else pd.DataFrame()
        if len(m):  # none when the unmasked accuracy is 0
            m = m.rename(columns={"minimal_k": "value"}).assign(measure="minimal_k")
            cols = ["task", "metric", "curve", "measure", "value", "low", "high", "heads", "found",
                    "tested", "n_examples"]  # fmt: skip
            frame = pd.concat([frame, m[cols]], ignore_index=True)
        return frame

    def verdicts(self, metric: str = "accuracy") -> pd.DataFrame:
        """Per task, at the run's largest k: are the TopK heads necessary, and sufficient?"""
        return verdicts(self.curves(), metric)

    def figure(self, **kwargs):
        """Faithfulness vs kept fraction (``figures.sufficiency.plot_faithfulness``)."""
        from interp_heads.figures.sufficiency import plot_faithfulness

        return plot_faithfulness(self.curves(), **kwargs)

    def __repr__(self) -> str:
        tasks = list(dict.fromkeys(self.records.get("task", [])))
        ks = sorted({int(k) for k in self.records.get("k", [])})
        return f"SufficiencyResult(tasks={tasks}, n_heads={self.n_total}, kept ks={ks})"


def sufficiency(
    model,
    task,
    ranking=None,
    *,
    method: str = "auto",
    ks: Sequence[int] = (),
    seeds: int = 3,
    metrics: Sequence[str] = DEFAULT_METRICS,
    ablation: str = "mean",
    max_new_tokens: int = 8,
    batch_size: int = 16,
    fmt: str | None = None,
    out_dir=None,
    n_boot: int = 1000,
    progress: bool = False,
    pack_rows=None,
) -> SufficiencyResult:
    """Kept-set curves of ``task``'s heads: how many of them the task needs.

    Args:
        model: the model (any backend).
        task: a ``Task`` (its examples as they are: filter them to correctly answered ones
            first, ``interp_heads.take_correct``, as the pipeline does) or a built-in's name.
        ranking: a ``HeadScores`` or heads most important first; None: ``attribute_heads(model,
            task, method)``.
        ks: the k the verdicts speak of (also measured), beside MIB's kept fractions.
        seeds: random kept sets per k. ``metrics``: registered metric names (accuracy gives the
            minimal head set; the logit metrics need no generation).
        ablation: what an ablated head's ``hook_z`` becomes (a registered kind).
        fmt: the prompt format of ranking and evaluation; None: the task's (a file that
            declares none is measured once, as on the command line).
        out_dir: a folder to store and resume the sweep's conditions in.
    """
    from interp_heads.sweep.loop import SweepConfig, run_sweep

    if isinstance(task, str):
        from interp_heads.tasks import load_task

        task = load_task(task)
    fmt = task_format(model, task, fmt)  # the task's, measured once if its file declares none
    if ranking is None:
        from interp_heads.attribution import attribute_heads

        ranking = attribute_heads(model, task, method, batch_size=batch_size, fmt=fmt)
    check_same_format(model, task, fmt, ranking, "sufficiency")
    n_total = model.cfg.n_layers * model.cfg.n_heads
    config = SweepConfig(
        ks=kept_grid(n_total, ks), selections=list(SELECTIONS), seeds=seeds, ablation=ablation,
        max_new_tokens=max_new_tokens, fmt=fmt, metrics=list(metrics),
    )  # fmt: skip
    with warnings.catch_warnings():  # checked above, in this function's name
        warnings.simplefilter("ignore", FormatWarning)
        result = run_sweep(
            model, {task.name: task}, {task.name: ranking}, config, batch_size=batch_size,
            out_dir=out_dir, progress=progress, pack_rows=pack_rows,
        )  # fmt: skip
    heads = {task.name: ranked_heads(ranking)}
    return SufficiencyResult(result.records, n_total, sorted(set(ks)), heads, n_boot)
