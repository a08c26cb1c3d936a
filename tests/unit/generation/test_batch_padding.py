"""Batches cut by a budget of padding positions (``batch_padding``): which prompts share a batch,
and greedy tokens equal to each prompt generated alone (no padding at all), masked or not, with
or without the shared prompt prefix; resume keys and digests unchanged when it is not set."""

from __future__ import annotations

import pytest

from interp_heads.config.run_config import RunConfig
from interp_heads.execution.base import Generation
from interp_heads.generation.decode import batches, generate_tokens, padding_budget_groups
from interp_heads.generation.prefix import PromptPrefixes
from interp_heads.interventions.masks import mask_heads
from interp_heads.interventions.means import head_means
from interp_heads.sweep.config import SweepConfig

PROMPTS = ["a", "say hello there, my good friend of old", "xyz", "one two three four five six",
           "q?", "the cat sat on the mat and then it slept", "hi", "seven eight"]  # fmt: skip
HEADS = [(0, 1), (1, 3), (2, 0)]


def test_groups_follow_the_budget_by_hand():
    lengths = [5, 40, 6, 41, 7, 100]
    # in the order 0, 2, 4, 1, 3, 5, budget 10: 5, 6, 7 pad 1 + 2 = 3 | adding 40 would pad
    # 3 x 33 + ... > 10: cut | 40, 41 pad 1 | 100 would pad 60 + 59: cut
    assert padding_budget_groups([0, 2, 4, 1, 3, 5], lengths, 8, 10) == [[0, 2, 4], [1, 3], [5]]
    # the longest so far counts, not the last: 41 then 5 pads 36
    assert padding_budget_groups([3, 0, 2], lengths, 8, 36) == [[3, 0], [2]]  # 6 would pad 35 more
    assert padding_budget_groups([0, 1, 2], [4, 4, 4], 2, 0) == [[0, 1], [2]]  # batch_size cuts
    assert padding_budget_groups([0, 1, 2], [4, 4, 5], 8, 0) == [[0, 1], [2]]  # no padding at all


def test_a_budget_that_never_binds_gives_the_same_batches(tiny):
    plain = [idx for idx, _, _ in batches(tiny, PROMPTS, 3, None)]
    assert [idx for idx, _, _ in batches(tiny, PROMPTS, 3, None, batch_padding=10**6)] == plain


def test_every_batch_keeps_to_the_padding_budget_and_every_prompt_comes_once(tiny):
    got = list(batches(tiny, PROMPTS, 4, None, batch_padding=6))
    assert sorted(i for idx, _, _ in got for i in idx) == list(range(len(PROMPTS)))
    for idx, _, mask in got:
        assert len(idx) <= 4 and int((mask == 0).sum()) <= 6 and (mask.sum(1) > 0).all()
    padded = sum(t.numel() for _, t, _ in got)
    plain = sum(t.numel() for _, t, _ in batches(tiny, PROMPTS, 4, None))
    assert padded < plain  # less padding than four prompts a batch


def _alone(model, **kw):
    return [generate_tokens(model, [p], 6, stop_at_eos=False, **kw)[0] for p in PROMPTS]


@pytest.mark.parametrize("masked", [False, True])
def test_tokens_equal_each_prompt_generated_alone(tiny, masked):
    means = head_means(tiny, PROMPTS)
    with mask_heads(tiny, HEADS if masked else [], "mean", values=means):
        alone = _alone(tiny)
        budget = generate_tokens(tiny, PROMPTS, 6, batch_size=4, batch_padding=6,
                                 stop_at_eos=False)  # fmt: skip
    assert budget == alone


def test_prefix_batches_follow_the_same_budget(tiny):
    means = head_means(tiny, PROMPTS)
    prefixes = PromptPrefixes(tiny, PROMPTS, batch_size=4, batch_padding=6)
    assert len(prefixes) == len(list(batches(tiny, PROMPTS, 4, None, batch_padding=6))) > 2
    with mask_heads(tiny, HEADS, "mean", values=means, positions="last"):
        alone = _alone(tiny)
        shared = generate_tokens(tiny, PROMPTS, 6, batch_size=4, batch_padding=6,
                                 stop_at_eos=False, prefixes=prefixes)  # fmt: skip
    assert shared == alone


def test_keys_and_digests_change_only_when_set():
    assert "batch_padding" not in Generation(6).key()
    assert Generation(6, batch_padding=512).key()["batch_padding"] == 512
    assert SweepConfig(ks=[2]).to_dict() == {
        k: v for k, v in SweepConfig(ks=[2], batch_padding=None).to_dict().items()
    }
    assert "batch_padding" not in SweepConfig(ks=[2]).to_dict()
    base = {"model": "tiny", "tasks": ["tests/data/tiny_echo.jsonl"]}
    plain = RunConfig.from_dict(base)
    assert plain.digest() == RunConfig.from_dict({**base, "batch_padding": None}).digest()
    assert plain.digest() != RunConfig.from_dict({**base, "batch_padding": 512}).digest()
    assert plain.sweep_config([2], {}).generation(8).batch_padding is None
    set_ = RunConfig.from_dict({**base, "batch_padding": 512}).sweep_config([2], {})
    assert set_.generation(8).key()["batch_padding"] == 512
