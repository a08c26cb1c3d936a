"""The Cognitive Mirrors accuracy rule and COMET: BLEU, ROUGE-1 and the references, by hand."""

from __future__ import annotations

import math

import pytest

from interp_heads.errors import InputError
from interp_heads.metrics import MetricItem, resolve_metrics
from interp_heads.metrics.base import Metric
from interp_heads.metrics.cognitive_mirrors import (
    CognitiveMirrorsAccuracy,
    CognitiveMirrorsAccuracyGold,
    CognitiveMirrorsComet,
)
from interp_heads.metrics.overlap import corpus_bleu, rouge1, tokenize_13a, tokenize_rouge


def _json(answer: str) -> str:
    return f'[\n    {{"answer": "{answer}"}}\n]'


def _item(masked: str, unmasked: str | None, gold: str) -> MetricItem:
    return MetricItem(src="the sub-question", mt=masked, ref=gold, unmasked=unmasked)


# --------------------------------------------------------------------------- BLEU and ROUGE-1
def test_tokenize_13a_splits_punctuation_and_keeps_numbers_whole():
    assert tokenize_13a('[{"answer": "Paris"}]') == [
        "[", "{", '"', "answer", '"', ":", '"', "Paris", '"', "}", "]",
    ]  # fmt: skip
    # a period or comma between digits stays; a final period and a dash after a digit split off
    assert tokenize_13a("It costs 3.5, not 1,000.") == [
        "It",
        "costs",
        "3.5",
        ",",
        "not",
        "1,000",
        ".",
    ]
    assert tokenize_13a("pages 10-12") == ["pages", "10", "-", "12"]
    assert tokenize_13a("line-\nbreak &amp; more") == ["linebreak", "&", "more"]


def test_bleu_identical_texts_and_the_brevity_penalty():
    ref = "the cat sat on the mat today"
    assert corpus_bleu([ref], [ref]) == 1.0
    # every n-gram of the 6-token candidate matches; only the brevity penalty exp(1 - 7/6) is left
    assert corpus_bleu(["the cat sat on the mat"], [ref]) == pytest.approx(math.exp(1 - 7 / 6))
    # a longer candidate has no penalty: precisions 7/8, 6/7, 5/6, 4/5
    longer = corpus_bleu([ref + " again"], [ref])
    assert longer == pytest.approx((7 / 8 * 6 / 7 * 5 / 6 * 4 / 5) ** 0.25)


def test_bleu_precisions_by_hand():
    # 1-grams 5/6, 2-grams 3/5, 3-grams 2/4, 4-grams 1/3 (clipped counts), equal lengths: BP = 1
    got = corpus_bleu(["the cat sat on a mat"], ["the cat sat on the mat"])
    assert got == pytest.approx((5 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25)


def test_bleu_without_smoothing_is_zero_without_a_4gram_match():
    assert corpus_bleu(["Paris"], ["Paris"]) == 0.0  # no 4-gram at all: precision 0
    assert corpus_bleu(["a b c"], ["a b c"]) == 0.0
    assert corpus_bleu(["a b c x d e f"], ["a b c y d e f"]) == 0.0  # no 4-gram in common
    assert corpus_bleu([""], ["a b c d"]) == 0.0 and corpus_bleu(["a b c d"], [""]) == 0.0


def test_bleu_is_corpus_level():
    # counts are summed over the pairs before the precisions: 1-grams (4+1)/(4+1), 4-grams 1/1
    # (the second pair has no 4-gram); lengths 5 vs 6: BP = exp(1 - 6/5)
    got = corpus_bleu(["a b c d", "x"], ["a b c d", "x y"])
    assert got == pytest.approx(math.exp(1 - 6 / 5))


def test_rouge1_by_hand():
    assert tokenize_rouge("Paris, FRANCE! café") == ["paris", "france", "caf"]
    assert rouge1("Paris, France", "paris") == pytest.approx(2 * (1 / 2) * 1 / (1 / 2 + 1))
    assert rouge1("the the cat", "the cat sat") == pytest.approx(2 / 3)  # clipped: 2 of 3 each
    assert rouge1("cats", "cat") == 0.0  # no stemming
    assert rouge1("N/A", "paris") == 0.0 and rouge1("", "") == 0.0


# --------------------------------------------------------------------------- the rule
def test_bleu_part_compares_whole_texts_with_the_unmasked_text():
    m = CognitiveMirrorsAccuracy(cosine=1.0)  # the cosine never counts: BLEU and ROUGE-1 decide
    wrong = _json("Lyon")
    items = [
        _item(wrong, wrong, "Paris"),  # unchanged and wrong: correct through BLEU
        _item(_json("Paris"), wrong, "Paris"),  # changed and right: correct through ROUGE-1
        _item(_json("Lille"), wrong, "Paris"),  # changed and wrong
    ]
    parts = m.parts(items)
    # 11 tokens, one differs: n-gram precisions 10/11, 8/10, 6/9, 4/8
    changed = (10 / 11 * 8 / 10 * 6 / 9 * 4 / 8) ** 0.25
    assert parts["bleu"] == [1.0, pytest.approx(changed), pytest.approx(changed)]
    assert changed < 0.8
    assert parts["rouge1"] == [0.0, 1.0, 0.0]
    assert m.score(items) == [1.0, 1.0, 0.0]


def test_unmasked_condition_scores_one_by_construction():
    gens = [_json("Lyon"), _json("42"), "I do not know the answer to this one.", _json("")]
    items = [_item(g, g, "Paris") for g in gens]
    assert CognitiveMirrorsAccuracy(cosine=1.0).score(items) == [1.0] * 4
    # ... but the all-gold variant says whether the answers are right
    assert CognitiveMirrorsAccuracyGold(cosine=1.0).score(items) == [0.0] * 4
    short = [_item("Paris", "Paris", "Lyon")]  # under 4 tokens: no 4-gram, BLEU 0
    assert CognitiveMirrorsAccuracy(cosine=1.0).score(short) == [0.0]


def test_rouge_and_cosine_read_the_answer_with_the_joint_fallback(monkeypatch):
    seen = []

    def cosines(self, answers, golds):
        seen.append((answers, golds))
        return [0.61, 0.59]

    monkeypatch.setattr(CognitiveMirrorsAccuracy, "_cosines", cosines)
    broken = '[{"answer": "Par" "is"}]'  # its block does not parse: no answer
    items = [
        _item(_json("the capital"), _json("x"), "Paris"),
        _item(_json("Paris"), broken, "Paris"),
    ]
    m = CognitiveMirrorsAccuracy(bleu=1.1)
    assert m.score(items) == [1.0, 1.0]  # the cosine alone; ROUGE-1 of the whole text
    assert seen == [(["the capital", _json("Paris")], ["Paris", "Paris"])]
    assert m.parts(items)["rouge1"][1] == pytest.approx(rouge1(_json("Paris"), "Paris"))


def test_the_gold_variant_scores_extracted_or_plain_answers_against_gold():
    m = CognitiveMirrorsAccuracyGold(cosine=1.0)
    items = [
        _item(_json("Paris"), None, "Paris"),
        _item("Paris, of course", None, "Paris"),  # no JSON block: the whole text
        _item(_json("the city of Paris in France"), None, "the city of Paris in France"),
    ]
    parts = m.parts(items)
    assert parts["rouge1"] == [1.0, pytest.approx(2 / 4), 1.0]
    assert parts["bleu"] == [0.0, 0.0, 1.0]  # a 1-token answer has no 4-gram
    assert m.score(items) == [1.0, 0.0, 1.0]


def test_missing_unmasked_generation_is_refused():
    with pytest.raises(InputError, match="no unmasked generation"):
        CognitiveMirrorsAccuracy(cosine=1.0).score([_item(_json("a"), None, "a")])


class _Recorder(Metric):
    name, label = "recorder", "Recorder"

    def __init__(self):
        self.items = []

    def score(self, items):
        self.items += items
        return [0.5] * len(items)


def test_comet_prediction_reference_and_source():
    base = _Recorder()
    m = CognitiveMirrorsComet(base)
    items = [
        _item(_json("Lyon"), _json("Paris"), "Paris"),
        _item('[{"answer": "x", }]', "the unmasked\ntext", "gold"),  # no answer: whole texts
        _item(_json(""), _json("b"), "b"),  # an empty answer is N/A
    ]
    assert m.score(items) == [0.5] * 3
    got = [(it.src, it.mt, it.ref) for it in base.items]
    assert got == [
        ("Paris", "Lyon", "Paris"),
        ("gold", '[{"answer": "x", }]', "the unmasked text"),
        ("b", "N/A", "b"),
    ]
    assert m.needs_unmasked and "answer vs unmasked answer" in m.label


def test_registered_by_name():
    acc, gold, comet = resolve_metrics(
        ["cognitive_mirrors_accuracy", "cognitive_mirrors_accuracy_gold", "cognitive_mirrors_comet"]
    )
    assert isinstance(acc, CognitiveMirrorsAccuracy) and "BLEU vs unmasked>0.8" in acc.label
    assert isinstance(gold, CognitiveMirrorsAccuracyGold) and "all vs gold" in gold.label
    assert isinstance(comet, CognitiveMirrorsComet)
    assert "MiniLM" in acc.label  # the offline stand-in of the study's embeddings is named
