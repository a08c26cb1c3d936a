"""``batch_padding`` read beside the sweep: the ranking's gradient batches, the ablation means and
the unmasked baseline cut their batches by the same rule, with the same results up to float
sums, and the keys of runs that do not set it unchanged."""

from __future__ import annotations

import warnings

import pytest
import torch

from interp_heads.attribution import attribute_heads
from interp_heads.attribution.inputs import make_batches
from interp_heads.config.run_config import RunConfig
from interp_heads.generation.decode import padding_budget_groups
from interp_heads.interventions.means import head_means, position_means
from interp_heads.store.resume import values_key
from interp_heads.tasks import evaluate_baseline
from interp_heads.tasks.schema import Example, Task
from interp_heads.testing.tiny import MIXED_PROMPTS, PATCHING_EXAMPLES


@pytest.fixture
def task():
    return Task("t", list(PATCHING_EXAMPLES))


def test_groups_by_hand_with_a_memory_cap_beside_the_budget():
    lengths = [5, 6, 7, 40]
    two = lambda width: 2  # noqa: E731
    assert padding_budget_groups([0, 1, 2, 3], lengths, 8) == [[0, 1, 2, 3]]
    assert padding_budget_groups([0, 1, 2, 3], lengths, 8, None, two) == [[0, 1], [2, 3]]
    # 5, 6 pad 1 | a third row passes the cap | 7 then 40 would pad 33 > 10
    assert padding_budget_groups([0, 1, 2, 3], lengths, 8, 10, two) == [[0, 1], [2], [3]]
    # the cap reads the batch's widest prompt: 40 allows one row
    cap = lambda width: 1 if width >= 40 else 8  # noqa: E731
    assert padding_budget_groups([0, 1, 2, 3], lengths, 8, None, cap) == [[0, 1, 2], [3]]


def test_ranking_batches_hold_no_padding_past_the_budget(tiny, task):
    model = tiny
    whole = make_batches(model, task, batch_size=8)
    assert len(whole) == 1 and int((whole[0].mask == 0).sum()) > 0  # lengths differ
    cut = make_batches(model, task, batch_size=8, batch_padding=0)
    assert len(cut) > 1 and all(bool(b.mask.all()) for b in cut)
    assert sorted(i for b in cut for i in b.ids) == sorted(e.id for e in task)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a budget's cut is not the memory's: no warning
        roomy = make_batches(model, task, batch_size=8, batch_padding=0, rows_for_width=lambda w: 8)
    assert not any(b.memory_capped for b in roomy)
    assert [b.ids for b in roomy] == [b.ids for b in cut]


@pytest.mark.parametrize("method", ["gradxact", "ablation_atp", "exact"])
def test_scores_under_a_budget_equal_one_batch(tiny, task, method):
    whole = attribute_heads(tiny, task, method, batch_size=8)
    cut = attribute_heads(tiny, task, method, batch_size=8, batch_padding=0)
    torch.testing.assert_close(cut.scores, whole.scores, atol=1e-5, rtol=1e-4)
    assert cut.provenance["batch_padding"] == 0 and "batch_padding" not in whole.provenance
    assert "memory_capped_rows" not in cut.provenance


def test_a_bad_budget_is_one_line(tiny, task):
    from interp_heads.errors import InputError

    with pytest.raises(InputError, match="batch_padding must be an integer >= 0, got -1"):
        attribute_heads(tiny, task, "gradxact", batch_padding=-1)


def test_means_under_a_budget_equal_the_prompts_order(tiny):
    plain = head_means(tiny, MIXED_PROMPTS, batch_size=4)
    cut = head_means(tiny, MIXED_PROMPTS, batch_size=4, batch_padding=0)
    for layer in plain:
        torch.testing.assert_close(cut[layer], plain[layer], atol=1e-6, rtol=1e-5)
    # per prompt: each prompt's own means, in the prompts' order, whatever batch it went in
    per = head_means(tiny, MIXED_PROMPTS, batch_size=4, per_prompt=True, batch_padding=0)
    for prompt, got in zip(MIXED_PROMPTS, per, strict=True):
        (alone,) = head_means(tiny, [prompt], per_prompt=True)
        for layer in alone:
            torch.testing.assert_close(got[layer], alone[layer], atol=1e-6, rtol=1e-5)
    pos = position_means(tiny, MIXED_PROMPTS, batch_size=4)
    pos_cut = position_means(tiny, MIXED_PROMPTS, batch_size=4, batch_padding=0)
    for layer in pos:
        torch.testing.assert_close(pos_cut[layer], pos[layer], atol=1e-6, rtol=1e-5)


def test_baseline_under_a_budget_generates_the_same_answers(tiny):
    exs = [Example(f"e{i}", "t", p, "x") for i, p in enumerate(MIXED_PROMPTS)]
    task = Task("t", exs)
    plain = evaluate_baseline(tiny, task, fmt="plain", max_new_tokens=4, batch_size=8)
    cut = evaluate_baseline(
        tiny, task, fmt="plain", max_new_tokens=4, batch_size=8, batch_padding=0
    )
    assert cut.generations == plain.generations


def test_keys_of_runs_without_it_are_unchanged():
    base = {"model": "tiny", "tasks": ["tests/data/tiny_echo.jsonl"]}
    assert "batch_padding" not in RunConfig.from_dict(base).attribution_settings("plain")
    set_ = RunConfig.from_dict({**base, "batch_padding": 512}).attribution_settings("plain")
    assert set_["batch_padding"] == 512
    args = ({"m": 1}, "p", {"kind": "mean"}, 32, "cpu")
    assert values_key(*args) == values_key(*args, None) != values_key(*args, 512)
