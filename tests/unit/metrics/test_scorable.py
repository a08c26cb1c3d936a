"""What a metric can score (``metrics.scorable``): the declared blind spots are real ones (the
study's rule scores an unchanged right plain answer 0) and the floor is the declared value."""

from __future__ import annotations

import pytest

from interp_heads.metrics import METRICS, MetricItem, scorable
from interp_heads.metrics.cognitive_mirrors import CognitiveMirrorsAccuracy
from interp_heads.metrics.scorable import below_floor, blind_to


def test_the_study_rule_cannot_tell_a_right_plain_answer_from_a_wrong_one():
    rule = CognitiveMirrorsAccuracy(cosine=1.0)  # no encoder: BLEU and ROUGE-1 only
    right = MetricItem(src="2+4=", mt="6", ref="6", unmasked="6")
    wrong = MetricItem(src="2+4=", mt="7", ref="6", unmasked="6")
    assert rule.score([right, wrong]) == [0.0, 0.0]  # blind: the reason the format is declared
    assert "cannot score plain answers" in scorable("cognitive_mirrors_accuracy", "plain", 1.0)
    assert "cannot score chat answers" in blind_to(rule, "chat")
    # in the study's JSON format the same answers are told apart
    js = '[\n    {"answer": "%s"}\n]'
    items = [MetricItem(src="q", mt=js % a, ref="6", unmasked=js % "6") for a in ("6", "7")]
    assert rule.score(items) == [1.0, 0.0]
    assert scorable("cognitive_mirrors_accuracy", "cognitive_mirrors", 1.0) is None


@pytest.mark.parametrize(
    ("metric", "fmt", "unmasked", "undecided"),
    [
        ("accuracy", "plain", 0.0, True),
        ("accuracy", "plain", 0.24, True),
        ("accuracy", "plain", 0.25, False),  # at the floor: something to remove
        ("accuracy", "cognitive_mirrors", 1.0, False),
        ("cognitive_mirrors_accuracy_gold", "plain", 1.0, False),  # scored whole: any format
        ("cognitive_mirrors_comet", "plain", 1.0, True),
        ("kl_unmasked", "plain", 0.0, False),  # no floor: it grows with damage
        ("accuracy", None, float("nan"), False),  # nothing known: nothing claimed
        ("not_a_metric", "plain", 0.0, False),  # a stored table's unknown metric declares nothing
    ],
)
def test_scorable_by_hand(metric, fmt, unmasked, undecided):
    assert (scorable(metric, fmt, unmasked) is not None) == undecided


def test_every_proportion_metric_declares_a_floor_and_every_blind_spot_a_reason():
    for cls in METRICS.classes():
        if cls.proportion:
            assert cls.floor == 0.25, cls.name
        if cls.formats:
            assert cls.blind and "{fmt}" in cls.blind, cls.name
    assert "0.10 is below its floor 0.25" in below_floor("accuracy", 0.1)
