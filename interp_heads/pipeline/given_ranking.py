"""A ranking made elsewhere, read and checked before a run starts: ``ranking =`` (a run folder,
``ranking.csv`` or ``attribution.parquet``) or ``heads =`` (labels in order).

A run with one masks its heads instead of ranking them (``ablate`` builds such a config). Each
task gets a :class:`GivenRanking`: the heads in order, the ``HeadScores`` stored beside them
when they rank the heads in the same order (so ``elbow`` reads their importances), and what the
ranking's provenance tells the run: the examples it was computed on (left out of the evaluation
unless ``allow_overlap``) and its prompt format (used unless ``fmt`` is set).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from interp_heads.config import validation
from interp_heads.config.run_config import RunConfig
from interp_heads.errors import PipelineError
from interp_heads.heads import Head, head_label, parse_heads
from interp_heads.pipeline.rankings import check_ranking_source, load_ranking, stored_scores


@dataclass
class GivenRanking:
    """One task's given ranking: heads in order, their scores (or None) and their provenance."""

    heads: list[Head]
    scores: object = None  # HeadScores ranking ``heads`` in this order, else None
    provenance: dict = field(default_factory=dict)
    task: str = ""  # the task it was made on

    @property
    def ranking(self):
        """What the sweep selects from: the scores when stored, else the heads."""
        return self.heads if self.scores is None else self.scores

    @property
    def example_ids(self) -> set[str]:
        return set(self.provenance.get("example_ids") or [])

    @property
    def fmt(self) -> str | None:
        fmt = self.provenance.get("fmt")
        return fmt if fmt in ("chat", "plain") else None


def given_rankings(config: RunConfig, model, tasks: dict) -> dict[str, GivenRanking]:
    """Each task's given ranking (empty when the config names none), checked against the model
    and the run's ``ks``.

    Raises:
        PipelineError: a missing or damaged ranking, one made on no such task, a head outside
            the model, a k larger than the ranking, ``elbow`` without stored scores.
    """
    if not config.given_ranking:
        return {}
    n_layers, n_heads = model.cfg.n_layers, model.cfg.n_heads
    out = {}
    for name in tasks:
        if config.heads is not None:
            heads = parse_heads(list(config.heads), n_layers, n_heads)
            validation.check_unique_heads(heads, "heads")
            out[name] = GivenRanking(heads, task=name)
        else:  # made on this model and this task file, unless allowed
            out[name] = _from_file(config, tasks[name], model)
    return out


def _from_file(config: RunConfig, task, model) -> GivenRanking:
    made_on = config.ranking_task or task.name
    heads = load_ranking(config.ranking, made_on, model.cfg.n_layers, model.cfg.n_heads)
    check_ranking_source(
        config.ranking,
        made_on,
        model,
        task,
        config.allow_other_model,
        config.allow_other_task,
    )
    scores = stored_scores(config.ranking, made_on)  # read once: provenance and elbow
    prov = {} if scores is None else dict(scores.provenance)
    same_order = scores is not None and [tuple(h) for h in scores.top(len(heads))] == heads
    if config.elbow and not same_order:
        why = "has no attribution scores" if scores is None else "has scores in another order"
        raise PipelineError(
            f"elbow needs the ranking's scores: ranking {config.ranking!r} {why} of task "
            f"{made_on!r} beside it (give the run folder or attribution.parquet)"
        )
    return GivenRanking(heads, scores if same_order else None, prov, made_on)


def check_ks_fit(ks: list[int], given: dict[str, GivenRanking], config: RunConfig) -> None:
    """Every k (the elbow's too) is at most the number of heads each given ranking holds."""
    from interp_heads.sweep.elbow import elbow_k

    source = "heads" if config.heads is not None else f"ranking {config.ranking!r}"
    for g in given.values():
        extra = [elbow_k(g.scores)] if config.elbow else []
        validation.check_ks_fit(list(ks) + extra, len(g.heads), source)


def manifest_record(config: RunConfig, given: dict[str, GivenRanking]) -> dict:
    """What the manifest records of the given ranking (the page links and lists it)."""
    first = next(iter(given.values()))
    record = {"heads": [head_label(*h) for h in first.heads]}
    if config.ranking is not None:
        record |= {
            "source": str(config.ranking),
            "path": str(Path(config.ranking).resolve()),
            "task": first.task,
            "info": {k: first.provenance[k] for k in ("method", "fmt") if k in first.provenance},
        }
    return record
