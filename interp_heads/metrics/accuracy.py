"""Accuracy: 1.0 when the generation gives the answer (``interp_heads.tasks.checking`` rule)."""

from __future__ import annotations

from interp_heads.metrics.base import PROPORTION_FLOOR, Metric, MetricItem
from interp_heads.metrics.registry import METRICS


@METRICS.register
class Accuracy(Metric):
    """Exact-answer accuracy: first non-empty line contains the normalised answer or an alias."""

    name = "accuracy"
    proportion = True
    label = "Accuracy"
    is_comet = False
    floor = PROPORTION_FLOOR

    def score(self, items: list[MetricItem]) -> list[float]:
        """1.0 for a correct generation, else 0.0 (see ``tasks.checking.is_correct``)."""
        from interp_heads.tasks.checking import is_correct

        return [float(is_correct(it.mt, it.ref, it.aliases, it.distractors)) for it in items]
