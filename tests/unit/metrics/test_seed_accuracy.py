"""The Cognitive Mirrors accuracy rule against hand-computed BLEU and ROUGE-1 values."""

from __future__ import annotations

import pytest

from interp_heads.metrics import BleuRougeCosine, MetricItem, resolve_metrics


def _item(mt, ref):
    return MetricItem(src="q", mt=mt, ref=ref)


def test_rule_on_hand_computed_cases():
    m = BleuRougeCosine(cosine=1.0)  # cosine > 1 never holds: BLEU and ROUGE-1 decide
    items = [
        _item("the capital is paris", "the capital is paris"),  # BLEU 1
        _item("paris\nmore text", "paris france"),  # ROUGE-1 P=1 R=1/2 F=2/3; BLEU = BP e^(1-2)
        _item("paris is a big city", "paris france"),  # ROUGE-1 P=1/5 R=1/2 F=2/7
        _item("london", "paris france"),  # nothing in common
    ]
    parts = m.parts(items)
    assert parts["bleu"][0] == pytest.approx(1.0)
    assert parts["rouge1"][1] == pytest.approx(2 / 3)
    assert parts["bleu"][1] == pytest.approx(2.718281828 ** (1 - 2), abs=1e-3)
    assert parts["rouge1"][2] == pytest.approx(2 / 7)
    assert parts["rouge1"][3] == 0.0 and parts["bleu"][3] == 0.0
    assert m.score(items) == [1.0, 1.0, 0.0, 0.0]
    assert BleuRougeCosine(rouge=0.7, cosine=1.0).score(items) == [1.0, 0.0, 0.0, 0.0]


def test_cosine_alone_can_make_an_answer_count(monkeypatch):
    monkeypatch.setattr(BleuRougeCosine, "_cosines", lambda self, items: [0.61, 0.59])
    items = [_item("london", "paris"), _item("london", "paris")]
    assert BleuRougeCosine().score(items) == [1.0, 0.0]


def test_registered_by_name():
    (m,) = resolve_metrics(["bleu_rouge_cosine"])
    assert isinstance(m, BleuRougeCosine) and "ROUGE-1>0.6" in m.label
