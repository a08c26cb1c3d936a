"""The Cognitive Mirrors accuracy rule and COMET, with the study's references (Ma et al., 2025).

Read from the study's ``utils.py`` (``simi_scoring``, ``evaluate_metrics``) and
``ablation_topk.py``: a masked answer is **correct** when

- BLEU of the masked model's *whole generated text* against the **unmasked** model's whole
  generated text is above 0.8 (``evaluate``'s corpus BLEU: ``metrics.overlap.corpus_bleu``), or
- ROUGE-1 F of the masked model's *extracted answer* against the **gold** answer is above 0.6
  (``evaluate``'s rouge: ``metrics.overlap.rouge1``), or
- the embedding cosine of the extracted answer and the **gold** answer is above 0.6. The study
  embeds with an API model (``text-embedding-3-large``); offline this is the MiniLM stand-in
  (``MiniLMCosine``), and the label says so.

``cognitive_mirrors_accuracy_gold`` is the all-gold variant: the same parts and thresholds, each
against the gold answer (BLEU of the extracted answer, not the whole text; a generation with
no JSON answer is scored whole, so plain answers work too); it says whether the
masked model is *right*, where the study's rule also counts an unchanged wrong answer, so its
unmasked value is the model's own accuracy. (``bleu_rouge_cosine``, older, does the same on
plain free-form answers with sacrebleu's smoothed sentence BLEU and a stemmer.)

COMET: prediction = masked extracted answer, reference = **unmasked** extracted answer, source =
**gold** answer (``evaluate``'s comet, ``Unbabel/wmt22-comet-da``; the MiniLM stand-in of answer
vs unmasked answer when no checkpoint loads). Answers are extracted from the JSON block as the
study does (``tasks.cognitive_mirrors.study_answers``: both fall back to the whole generations
when either has none; empty ones become ``N/A``). An answer the mask did not change is correct
through BLEU, so the unmasked condition scores 1.0 whenever its generations have at least 4 tokens
(unsmoothed 4-gram BLEU of a shorter text is 0). Both metrics need each item's unmasked
generation (``MetricItem.unmasked``; the sweep attaches it for metrics with ``needs_unmasked``).

Both score the study's JSON answers only (``formats``): a plain or chat answer has no block, so
its extracted answer is the template's placeholder for the masked and the unmasked model alike
(ROUGE-1 and the cosine then compare the placeholder with gold, COMET the placeholder with
itself) and its BLEU is 0 under 4 tokens; ``metrics.scorable`` makes such a cell undecided.
"""

from __future__ import annotations

from interp_heads.errors import InputError
from interp_heads.metrics.base import PROPORTION_FLOOR, Metric, MetricContext, MetricItem
from interp_heads.metrics.comet_metric import CometMetric
from interp_heads.metrics.overlap import corpus_bleu, rouge1
from interp_heads.metrics.registry import METRICS
from interp_heads.tasks.cognitive_mirrors import answer_text, study_answers


def _one_line(text: str) -> str:
    """``text`` on one line: the embedding and COMET models read whitespace runs as one space,
    and the stand-ins score a text's first line."""
    return " ".join(text.split())


def _pairs(items: list[MetricItem], what: str) -> list[tuple[str, str]]:
    """Each item's ``(masked answer, unmasked answer)``; every item needs its unmasked text."""
    missing = [i for i, it in enumerate(items) if it.unmasked is None]
    if missing:
        raise InputError(
            f"{what}: item {missing[0]} has no unmasked generation "
            "(interp_heads.sweep.unmasked.attach_unmasked fills them)"
        )
    return [study_answers(it.mt, it.unmasked) for it in items]


@METRICS.register
class CognitiveMirrorsAccuracy(Metric):
    """1.0 when BLEU(masked vs unmasked text) > ``bleu``, ROUGE-1(answer vs gold) > ``rouge`` or
    MiniLM cosine(answer vs gold) > ``cosine``; else 0.0."""

    name = "cognitive_mirrors_accuracy"
    proportion = True
    is_comet = False
    needs_unmasked = True
    formats = ("cognitive_mirrors",)
    blind = (
        "the study's rule cannot score {fmt} answers (no JSON block: the answer extracted is "
        "the template's placeholder, and BLEU of a text under 4 tokens is 0)"
    )
    floor = PROPORTION_FLOOR

    def __init__(self, bleu: float = 0.8, rouge: float = 0.6, cosine: float = 0.6):
        self.bleu, self.rouge, self.cosine = bleu, rouge, cosine
        self.label = (
            f"Accuracy (Cognitive Mirrors rule: BLEU vs unmasked>{bleu:g} | ROUGE-1>{rouge:g} | "
            f"MiniLM cosine>{cosine:g})"
        )

    def parts(self, items: list[MetricItem]) -> dict[str, list[float]]:
        """Per-item ``bleu`` (whole text vs unmasked), ``rouge1``, ``cosine`` (answer vs gold)."""
        answers = [a for a, _ in _pairs(items, self.name)]
        return {
            "bleu": [corpus_bleu([it.mt], [it.unmasked]) for it in items],
            **self._vs_gold(answers, items),
        }

    def _vs_gold(self, answers: list[str], items: list[MetricItem]) -> dict[str, list[float]]:
        return {
            "rouge1": [rouge1(a, it.ref) for a, it in zip(answers, items, strict=True)],
            "cosine": self._cosines(answers, [it.ref for it in items])
            if self.cosine < 1.0
            else [0.0] * len(items),
        }

    def _cosines(self, answers: list[str], golds: list[str]) -> list[float]:
        from interp_heads.metrics.embedding import MiniLMCosine

        pairs = zip(answers, golds, strict=True)
        return MiniLMCosine().score([MetricItem(src="", mt=_one_line(a), ref=g) for a, g in pairs])

    def score(self, items: list[MetricItem]) -> list[float]:
        """Per-item 1.0 or 0.0 by the rule (a cosine threshold >= 1 never loads the encoder)."""
        p = self.parts(items)
        return [
            float(b > self.bleu or r > self.rouge or c > self.cosine)
            for b, r, c in zip(p["bleu"], p["rouge1"], p["cosine"], strict=True)
        ]


@METRICS.register
class CognitiveMirrorsAccuracyGold(CognitiveMirrorsAccuracy):
    """The rule's parts and thresholds with every reference gold: 1.0 when BLEU, ROUGE-1 or the
    MiniLM cosine of the extracted answer against the gold answer is above its threshold."""

    name = "cognitive_mirrors_accuracy_gold"
    needs_unmasked = False
    formats = ()  # a generation with no JSON block is scored whole: every format

    def __init__(self, bleu: float = 0.8, rouge: float = 0.6, cosine: float = 0.6):
        super().__init__(bleu, rouge, cosine)
        self.label = (
            f"Accuracy (Cognitive Mirrors rule, all vs gold: BLEU>{bleu:g} | ROUGE-1>{rouge:g} | "
            f"MiniLM cosine>{cosine:g})"
        )

    def parts(self, items: list[MetricItem]) -> dict[str, list[float]]:
        """Per-item ``bleu``, ``rouge1`` and ``cosine`` of the extracted answer vs gold."""
        answers = [answer_text(it.mt) for it in items]
        answers = [a if a.strip() else "N/A" for a in answers]
        return {
            "bleu": [corpus_bleu([a], [it.ref]) for a, it in zip(answers, items, strict=True)],
            **self._vs_gold(answers, items),
        }


@METRICS.register
class CognitiveMirrorsComet(Metric):
    """COMET of the masked answer against the unmasked answer, with the gold answer as source."""

    name = "cognitive_mirrors_comet"
    needs_unmasked = True
    formats = ("cognitive_mirrors",)
    blind = (
        "the study's COMET cannot score {fmt} answers (no JSON block: masked and unmasked "
        "answers are both the template's placeholder)"
    )

    def __init__(self, base: Metric):
        self.base = base
        self.is_comet = base.is_comet
        self.label = f"{base.label}, answer vs unmasked answer (Cognitive Mirrors)"
        self.model = getattr(base, "model", None)

    Options = CometMetric.Options  # COMET's checkpoint: one ``comet_model`` key for both

    @classmethod
    def build(cls, options, ctx: MetricContext) -> Metric:
        """COMET as ``comet`` builds it (its checkpoint, else the MiniLM stand-in), wrapped."""
        return cls(CometMetric.build(options, ctx))

    def score(self, items: list[MetricItem]) -> list[float]:
        pairs = _pairs(items, self.name)
        return self.base.score(
            [
                MetricItem(src=it.ref, mt=_one_line(a), ref=_one_line(b))
                for (a, b), it in zip(pairs, items, strict=True)
            ]
        )
