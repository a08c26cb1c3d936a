"""The Cognitive Mirrors accuracy rule (Ma et al., NeurIPS 2025) for free-form answers.

An answer counts as correct (1.0) when its sentence BLEU against the reference exceeds 0.8, or
its ROUGE-1 F-score exceeds 0.6, or the cosine of its sentence embedding with the reference's
exceeds 0.6; else 0.0. BLEU is sacrebleu's sentence BLEU (divided by 100), ROUGE-1 is
``rouge-score``'s (Google's reimplementation of the ROUGE package, with stemming), and the
cosine is the local MiniLM stand-in (``MiniLMCosine``), not the Cognitive Mirrors study's own embedding model. The
thresholds are settings, so a stricter or looser rule is one argument away.
"""

from __future__ import annotations

from interp_heads.metrics.base import PROPORTION_FLOOR, Metric, MetricItem, first_line
from interp_heads.metrics.embedding import MiniLMCosine
from interp_heads.metrics.registry import METRICS


@METRICS.register
class BleuRougeCosine(Metric):
    """1.0 when BLEU > ``bleu``, ROUGE-1 F > ``rouge``, or MiniLM cosine > ``cosine``; else 0.0."""

    name = "bleu_rouge_cosine"
    proportion = True
    floor = PROPORTION_FLOOR
    is_comet = False

    def __init__(self, bleu: float = 0.8, rouge: float = 0.6, cosine: float = 0.6):
        self.bleu, self.rouge, self.cosine = bleu, rouge, cosine
        self.label = f"Accuracy (BLEU>{bleu:g} | ROUGE-1>{rouge:g} | MiniLM cosine>{cosine:g})"

    def parts(self, items: list[MetricItem]) -> dict[str, list[float]]:
        """Per-item ``bleu``, ``rouge1`` and ``cosine`` in [0, 1] (the rule's three inputs)."""
        from rouge_score import rouge_scorer
        from sacrebleu.metrics import BLEU

        bleu = BLEU(effective_order=True)
        rouge = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)
        mts = [first_line(it.mt) for it in items]
        return {
            "bleu": [
                bleu.sentence_score(m, [it.ref]).score / 100.0
                for m, it in zip(mts, items, strict=True)
            ],
            "rouge1": [
                rouge.score(it.ref, m)["rouge1"].fmeasure for m, it in zip(mts, items, strict=True)
            ],
            "cosine": self._cosines(items) if self.cosine < 1.0 else [0.0] * len(items),
        }

    def _cosines(self, items: list[MetricItem]) -> list[float]:
        return MiniLMCosine().score(items)

    def score(self, items: list[MetricItem]) -> list[float]:
        """Per-item 1.0 or 0.0 by the rule (a cosine threshold >= 1 never loads the encoder)."""
        p = self.parts(items)
        return [
            float(b > self.bleu or r > self.rouge or c > self.cosine)
            for b, r, c in zip(p["bleu"], p["rouge1"], p["cosine"], strict=True)
        ]
