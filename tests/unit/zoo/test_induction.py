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
        for pos, target in zip(d.positions, d.targets, strict=True):
            # the token to continue: the one at pos (a copy) or before the space (a query); its
            # first occurrence comes earlier, and the answer is the letter after that one
            key = d.text[pos - 1] if d.text[pos] == " " else d.text[pos]
            first = d.text.index(key)
            assert first < pos - (d.text[pos] == " ") and target == d.text[first + 1]
            if name != "induction_queries":
                assert target == d.text[pos + 1]


@pytest.mark.parametrize("name", ["induction_repeat", "induction_shifted"])
def test_repeat_drills_target_every_repeated_letter(name):
    # brute force: every position but the last whose letter occurred before has a target
    for d in drills(name, 50, seed=4):
        want = [i for i in range(15) if d.text[i] in d.text[:i]]
        assert list(d.positions) == want


def test_shifted_drills_vary_period_and_offset():
    rows = drills("induction_shifted", 300, seed=5)
    periods, starts = set(), set()
    for d in rows:
        first = d.positions[0]  # the block's second occurrence starts here
        periods.add(first - d.text.index(d.text[first]))
        starts.add(d.text.index(d.text[first]))
    assert periods == set(range(3, 9)) and len(starts) >= 6


def test_drill_targets_land_on_their_positions():
    from interp_heads.zoo.train import IGNORE, _drill_batches

    recipe = Recipe("t", "induction", n_layers=1, n_heads=1, d_model=8, d_head=8, n_pool=40,
                    drills=("induction_shifted",))  # fmt: skip
    model = new_model(recipe)
    ((tokens, targets),) = _drill_batches(model, recipe)
    for row, d in enumerate(drills("induction_shifted", 40, recipe.seed)):
        for pos in range(16):
            if pos in d.positions:  # the next character's own token (one byte each)
                assert targets[row, pos] == tokens[row, pos + 1]
            else:
                assert targets[row, pos] == IGNORE


def test_drills_are_seeded():
    assert drills("induction_queries", 5, 1) == drills("induction_queries", 5, 1)
    assert drills("induction_queries", 5, 1) != drills("induction_queries", 5, 2)


def test_recipe_without_later_fields_keeps_its_digest():
    r = Recipe("x", "induction", steps=10)
    fields = {k: v for k, v in dataclasses.asdict(r).items() if k not in ("drills", "positional")}
    blob = json.dumps({"recipe": fields, "fmt": FORMAT}, sort_keys=True)
    assert r.digest() == hashlib.sha256(blob.encode()).hexdigest()
    assert dataclasses.replace(r, drills=("induction_repeat",)).digest() != r.digest()
    assert dataclasses.replace(r, positional="shortformer").digest() != r.digest()


def test_zoo_cache_entries_of_other_tasks_unchanged():
    # the digests their cached weights are stored under: a change here retrains them
    from interp_heads.zoo.recipes import ZOO

    assert ZOO["successor"].digest().startswith("cd209b2a5181a2f6")
    assert ZOO["ioi"].digest().startswith("b6994602d7b6b5c0")
    assert ZOO["two_hop"].digest().startswith("5091aef2b854adbb")


def test_shortformer_keeps_positions_out_of_the_values():
    # TransformerLens' shortformer: the residual stream holds no position, so a position-only
    # input difference cannot reach the output through a value
    model = new_model(Recipe("t", "induction", n_layers=1, n_heads=1, d_model=8, d_head=8,
                             positional="shortformer"))  # fmt: skip
    assert model.cfg.positional_embedding_type == "shortformer"
    tokens = model.to_tokens("aaaa", prepend_bos=False)
    with torch.no_grad():
        _, cache = model.run_with_cache(tokens)
    resid = cache["blocks.0.hook_resid_pre"][0]
    assert torch.allclose(resid, resid[:1].expand_as(resid))


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
