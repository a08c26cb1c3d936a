"""``reference = "unmasked"``: score an answer against the unmasked model's answer, not the gold one.

The Cognitive Mirrors study scores COMET with the unmasked model's own answer as the reference
(the gold answer as the source): a masked model is then judged by how far its answer moved, not by
whether it is right. :class:`VersusUnmasked` wraps a reference-based metric (COMET, the MiniLM
stand-in, chrF) and swaps each item's reference for ``item.unmasked``; accuracy and
``bleu_rouge_cosine`` keep the gold answer (they decide correctness). The label says which
reference was used ("COMET vs unmasked").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from interp_heads.errors import InputError
from interp_heads.metrics.base import Metric, MetricItem

REFERENCES = ("gold", "unmasked")
REFERENCE_METRICS = ("comet", "minilm_cosine", "chrf")  # the ones ``reference`` applies to


class VersusUnmasked(Metric):
    """``base`` scored with the unmasked model's answer (``MetricItem.unmasked``) as reference."""

    def __init__(self, base: Metric):
        self.base = base
        self.name = base.name
        self.label = f"{base.label} vs unmasked"
        self.is_comet = base.is_comet
        self.version = getattr(base, "version", 1)
        self.model = getattr(base, "model", None) or getattr(base, "path", None)

    def score(self, items: list[MetricItem]) -> list[float]:
        missing = [i for i, it in enumerate(items) if it.unmasked is None]
        if missing:
            raise InputError(
                f"reference 'unmasked': item {missing[0]} has no unmasked answer "
                "(interp_heads.sweep.unmasked.attach_unmasked fills them)"
            )
        return self.base.score([dataclasses.replace(it, ref=it.unmasked) for it in items])


def with_reference(metrics: Sequence[Metric], reference: str) -> list[Metric]:
    """The metrics, those of :data:`REFERENCE_METRICS` wrapped when ``reference == "unmasked"``."""
    if reference not in REFERENCES:
        raise InputError(f"unknown reference {reference!r}; use one of {', '.join(REFERENCES)}")
    if reference == "gold":
        return list(metrics)
    return [
        VersusUnmasked(m)
        if m.name in REFERENCE_METRICS and not isinstance(m, VersusUnmasked)
        else m
        for m in metrics
    ]
