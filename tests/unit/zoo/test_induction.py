"""The zoo's drills (dense training targets) and the induction score, against references written
here: the drill's meaning read off its text, the score as a loop over TransformerLens' patterns."""

import dataclasses
import hashlib
import json

import pytest
import torch

from interp_heads.zoo.induction import induction_scores, repeated_letters
from interp_heads.zoo.tasks import DRILLS, drills
from interp_heads.zoo.train import FORMAT, Recipe, new_model


@pytest.mark.parametrize("name", sorted(DRILLS))
def test_drill_targets_are_the_induction_answer(name):
    for d in drills(name, 50, seed=3):
        assert len(d.text) == 16 and len(d.positions) == len(d.targets)
        body = d.text[:8]
        assert len(set(body)) == 8
        for pos, target in zip(d.positions, d.targets, strict=True):
            # the token to continue: the one at pos (a copy) or before the space (a query)
            key = d.text[pos - 1] if d.text[pos] == " " else d.text[pos]
            assert target == body[body.index(key) + 1]
            if name == "induction_repeat":
                assert target == d.text[pos + 1]


def test_drills_are_seeded():
    assert drills("induction_queries", 5, 1) == drills("induction_queries", 5, 1)
    assert drills("induction_queries", 5, 1) != drills("induction_queries", 5, 2)


def test_recipe_without_drills_keeps_its_digest():
    r = Recipe("x", "induction", steps=10)
    fields = {k: v for k, v in dataclasses.asdict(r).items() if k != "drills"}
    blob = json.dumps({"recipe": fields, "fmt": FORMAT}, sort_keys=True)
    assert r.digest() == hashlib.sha256(blob.encode()).hexdigest()
    assert dataclasses.replace(r, drills=("induction_repeat",)).digest() != r.digest()


def test_induction_score_is_the_stripe_of_the_patterns():
    model = new_model(Recipe("t", "induction", n_layers=2, n_heads=2, d_model=32, d_head=8))
    scores = induction_scores(model, n=6, seed=1)
    texts = repeated_letters(6, seed=1)
    assert all(t[:8] == t[8:] and len(set(t[:8])) == 8 for t in texts)
    with torch.no_grad():
        _, cache = model.run_with_cache(model.to_tokens(texts, prepend_bos=False))
    for layer in range(2):
        pattern = cache["pattern", layer]
        for head in range(2):
            cells = [float(pattern[b, head, q, q - 7]) for b in range(6) for q in range(8, 16)]
            assert scores[layer, head] == pytest.approx(sum(cells) / len(cells), abs=1e-6)


def test_summary_names_each_layers_best_head():
    from interp_heads.zoo.induction import summary

    text = summary([[0.1, 0.25, 0.05], [0.3, 0.02, 0.91]])
    assert "layer 0: L0H1 0.25" in text and "layer 1: L1H2 0.91" in text
