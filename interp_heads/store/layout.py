"""The run folder's file names, in one place (:class:`FolderLayout`; ``store.folder.RunFolder``
adds the behaviour). Layout::

    manifest.json              config, digest, splits, versions, timings (RunFolder.write_manifest)
    baseline.csv               one row per task: accuracy, n_correct, n_rank, n_eval
    baseline/<task>.json       resume entry: the correctly answered ids (checksummed)
    attribution/<task>.json    resume entry: the task's HeadScores (checksummed)
    attribution.parquet        every head's score, all tasks
    ranking.csv                the same, sorted by task and rank
    conditions/<key>.json      resume entry: one finished sweep condition (checksummed)
    conditions/config.json     the sweep config the conditions belong to
    sweep.parquet              one row per (condition, example, metric)
    summary.parquet / .csv     mean and 95% interval per (task, selection, k, metric)
    significance.csv           TopK minus each random control, interval and p-value
    generations.jsonl          every generated answer
    prompts.jsonl              the prompt each evaluated example was given (rendered)
    attention.json             attention patterns of each task's top heads on a few prompts
    known_heads.json / .csv    resume entry and table: known-head kinds of the model's heads
    heads/specificity.csv      cross-task drop matrix (``analyses``); heads/cross/<task>/: its sweeps
    heads/stability.csv        each ranking re-ranked on two halves of its examples (``analyses``)
    heads/sufficiency.csv      CPR, CMD, necessity area and minimal head set per task (``sufficiency``)
    heads/sufficiency_curves.csv  faithfulness per kept k; heads/sufficiency_verdicts.csv: plain words
    heads/sufficiency.parquet  the kept-set sweep's records; heads/sufficiency/: its conditions
    heads/sufficient_sets.csv  searched sufficient set per task, verified beside prefix and random
    heads/sufficient_search_steps.csv  every trial of the search; heads/sufficient_sets/: its sweeps
    heads/sufficient_search/<task>__<which>.json  resume entry: one finished search (checksummed)
    figures/*.html, index.html the report
    scores/<metric>.csv        answer metrics scored afterwards (``interp-heads score``)
    .interp_heads-run          the marker that says the folder is an interp-heads run folder
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from interp_heads.store.names import safe_name

CONFIG_NAME = "config.json"  # conditions/config.json: the sweep config its entries belong to
MARKER = ".interp_heads-run"
SUBFOLDERS = ("baseline", "attribution", "conditions", "figures", "unmasked", "scores", "heads")


@dataclass(frozen=True)
class FolderLayout:
    """Every artifact path of one run folder (a task's entries through ``safe_name``)."""

    root: Path

    def __init__(self, root: str | os.PathLike):
        object.__setattr__(self, "root", Path(root))

    manifest = property(lambda self: self.root / "manifest.json")
    baseline_csv = property(lambda self: self.root / "baseline.csv")
    attribution_parquet = property(lambda self: self.root / "attribution.parquet")
    ranking_csv = property(lambda self: self.root / "ranking.csv")
    conditions = property(lambda self: self.root / "conditions")
    sweep_parquet = property(lambda self: self.root / "sweep.parquet")
    summary_parquet = property(lambda self: self.root / "summary.parquet")
    summary_csv = property(lambda self: self.root / "summary.csv")
    significance_csv = property(lambda self: self.root / "significance.csv")
    generations = property(lambda self: self.root / "generations.jsonl")
    prompts = property(lambda self: self.root / "prompts.jsonl")
    attention = property(lambda self: self.root / "attention.json")
    figures = property(lambda self: self.root / "figures")
    index = property(lambda self: self.root / "index.html")
    retired_index = property(lambda self: self.root / ".index.html.retired")  # lifecycle.start
    known_entry = property(lambda self: self.root / "known_heads.json")
    known_csv = property(lambda self: self.root / "known_heads.csv")
    specificity_csv = property(lambda self: self.root / "heads" / "specificity.csv")
    stability_csv = property(lambda self: self.root / "heads" / "stability.csv")
    sufficiency_sweep = property(lambda self: self.root / "heads" / "sufficiency")
    sufficiency_csv = property(lambda self: self.root / "heads" / "sufficiency.csv")
    sufficiency_curves_csv = property(lambda self: self.root / "heads" / "sufficiency_curves.csv")
    sufficiency_verdicts_csv = property(
        lambda self: self.root / "heads" / "sufficiency_verdicts.csv"
    )
    sufficiency_parquet = property(lambda self: self.root / "heads" / "sufficiency.parquet")
    sufficient_sets_csv = property(lambda self: self.root / "heads" / "sufficient_sets.csv")
    sufficient_steps_csv = property(
        lambda self: self.root / "heads" / "sufficient_search_steps.csv"
    )
    sufficient_sweeps = property(lambda self: self.root / "heads" / "sufficient_sets")

    def cross_sweep(self, source: str) -> Path:
        """The resumable sweep of one task's TopK on every task (``analyses``: specificity)."""
        return self.root / "heads" / "cross" / safe_name(source)

    scores = property(lambda self: self.root / "scores")  # ``interp-heads score``: <metric>.csv

    def baseline_entry(self, task: str) -> Path:
        return self.root / "baseline" / f"{safe_name(task)}.json"

    def unmasked_entry(self, task: str) -> Path:
        return self.root / "unmasked" / f"{safe_name(task)}.json"

    def attribution_entry(self, task: str) -> Path:
        return self.root / "attribution" / f"{safe_name(task)}.json"

    def search_entry(self, task: str, which: str) -> Path:
        """One finished head search of a task (``which``: ``main``, or ``r<i>``: resample i)."""
        return self.root / "heads" / "sufficient_search" / f"{safe_name(task)}__{which}.json"

    @property
    def conditions_config(self) -> Path:
        return self.conditions / CONFIG_NAME

    @staticmethod
    def condition_entry_in(conditions: Path, key: str) -> Path:
        return conditions / f"{key}.json"

    def score_file(self, metric: str) -> Path:
        return self.scores / f"{safe_name(metric)}.csv"

    def figure(self, name: str) -> Path:
        return self.figures / f"{safe_name(name)}.html"

    @property
    def marker(self) -> Path:
        return self.root / MARKER
