"""Score each distinct answer once per sweep: a cache keyed by metric and item (src, mt, ref, ...).

Masked answers repeat a lot across the conditions of a sweep (every condition answers the same
questions, and most masks change few answers), and a real COMET model is an XLM-R-large forward
pass per item. :class:`MetricCache` sends a metric only the items it has not scored yet (each
distinct one once, in one call) and counts how many look-ups it answered from memory.
"""

from __future__ import annotations

from collections import Counter

from interp_heads.metrics.base import Metric, MetricItem


class MetricCache:
    """Per-metric scores of distinct items, with hit counts.

    A metric is identified by ``(name, label)``: two COMET checkpoints have different labels.
    Scores are floats as the metric returned them; an item scored alone or in a batch of others
    gets the same score up to the metric's own batch effects (none for accuracy and chrF).
    """

    def __init__(self) -> None:
        self._scores: dict[tuple, float] = {}
        self.lookups: Counter[str] = Counter()
        self.scored: Counter[str] = Counter()

    def score(self, metric: Metric, items: list[MetricItem]) -> list[float]:
        """One score per item, in item order; only unseen distinct items reach ``metric.score``."""
        keys = self._fill(metric, items)
        self.lookups[metric.name] += len(items)
        return [self._scores[key] for key in keys]

    def prime(self, metric: Metric, items: list[MetricItem]) -> None:
        """Score the unseen distinct ``items`` in one call, without counting look-ups.

        Lets a caller batch many conditions' answers into one metric call, then read each
        condition's scores with :meth:`score` (hits there).
        """
        self._fill(metric, items)

    def _fill(self, metric: Metric, items: list[MetricItem]) -> list[tuple]:
        mid = (metric.name, metric.label)
        keys = [(mid, it) for it in items]  # every field of the (frozen) item is part of the key
        todo: dict[tuple, MetricItem] = {}
        for key, it in zip(keys, items, strict=True):
            if key not in self._scores and key not in todo:
                todo[key] = it
        if todo:
            values = metric.score(list(todo.values()))
            if len(values) != len(todo):
                raise ValueError(
                    f"metric {metric.name!r} returned {len(values)} scores for {len(todo)} items"
                )
            self._scores.update({key: float(v) for key, v in zip(todo, values, strict=True)})
        self.scored[metric.name] += len(todo)
        return keys

    def stats(self) -> dict:
        """``{metric: {lookups, scored, hits, hit_rate}}`` plus ``"all"`` summed over metrics."""
        out = {}
        for name in self.lookups | self.scored:
            out[name] = _row(self.lookups[name], self.scored[name])
        out["all"] = _row(sum(self.lookups.values()), sum(self.scored.values()))
        return out


def _row(lookups: int, scored: int) -> dict:
    hits = lookups - scored
    return {
        "lookups": lookups,
        "scored": scored,
        "hits": hits,
        "hit_rate": hits / lookups if lookups else 0.0,
    }
