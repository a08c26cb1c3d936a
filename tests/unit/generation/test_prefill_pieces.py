"""The prompt pass in pieces of about one length, stacked back into one batch, reads as the whole
batch's pass would.

The references are independent of the stacking: a batch's prompt pass run whole (one piece), and
generation with no prefix at all under a plain ``hook_z`` hook written from the definition of the
scope. The prompts are of very different lengths, so the pass is cut (asserted).
"""

from __future__ import annotations

import pytest
import torch

from interp_heads.generation import decode
from interp_heads.generation.decode import batches, generate_tokens, prefill_groups
from interp_heads.generation.kv_cache import KVCache
from interp_heads.generation.prefix import PromptPrefixes
from interp_heads.interventions.masks import mask_heads
from interp_heads.interventions.means import head_means
from interp_heads.models.backends import backend_of
from interp_heads.testing.tiny import tiny_model
from tests.helpers import generated_position_hooks, last_position_hooks

SHORT = ["ab", "a b c", "xyz!"]
LONG = ["the quick brown fox jumps over the lazy dog " * 2, "a" * 95, "lorem ipsum " * 8]
PROMPTS = [LONG[0], SHORT[0], LONG[1], SHORT[1], SHORT[2], LONG[2]]
ONE = ["a", "b"] + LONG  # one-token prompts: no token in the last-position prefix's pass


@pytest.fixture(scope="module", params=["rotary", "standard"])
def model(request):
    return tiny_model(positional_embedding_type=request.param)


def test_prefill_groups_cut_by_length_and_keep_one_length_whole():
    assert prefill_groups([3, 90, 4, 95, 88, 2]) == [[5, 0, 2], [4, 1, 3]]
    assert prefill_groups([300, 301, 299, 300]) == [[2, 0, 3, 1]]  # one length: one piece
    assert prefill_groups([5]) == [[0]]


def test_prefill_groups_cap_a_pieces_positions_on_the_cpu_only():
    cap = decode.PREFILL_POSITIONS["cpu"]
    width = cap // 6 + 1  # five rows fit a piece, not six
    assert prefill_groups([width] * 12, "cpu") == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [10, 11]]
    assert prefill_groups([width] * 12, "cuda") == [list(range(12))]  # no cap there
    assert prefill_groups([cap * 2], "cpu") == [[0]]  # a row wider than the cap: a piece alone
    assert prefill_groups([0, 0, width], "cpu") == [[0, 1], [2]]  # rows of no token: no error


def _one_piece(monkeypatch):
    monkeypatch.setattr(decode, "PREFILL_PADDING_MIN", 10**9)


@pytest.mark.parametrize("cut", [True, False])
def test_stacked_prefix_gives_the_logits_of_one_pass(model, monkeypatch, cut):
    """Whole prompts but their last token: the next step's logits, from the stacked cache, equal
    those of the batch's own pass over every prompt token at once."""
    _, tokens, mask = next(batches(model, PROMPTS, 6, None))
    whole = KVCache(model, 6).step(tokens, mask, mask)
    if not cut:
        _one_piece(monkeypatch)
    pieces = prefill_groups(mask[:, :-1].sum(1).tolist(), "cpu")
    assert len(pieces) == (2 if cut else 1)
    kv, _ = backend_of(model).prompt_pass(model, tokens[:, :-1], mask[:, :-1], pieces)
    assert torch.equal(kv.previous_attention_mask, mask[:, :-1])
    step = KVCache(model, 6, kv).step(tokens[:, -1:], mask[:, -1:], mask)
    torch.testing.assert_close(step, whole, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fast", [True, False])
def test_stacked_whole_prompt_prefix_matches_generation_without_a_prefix(model, fast):
    """Scope ``generated`` reads the whole prompt from the prefix; the reference generates from
    the prompt with the mask at every position past the prompt, as a plain hook."""
    whole = PromptPrefixes(model, PROMPTS, batch_size=6, fast_attention=fast, whole=True)
    (prefix,) = whole._kv.values()
    assert prefix.kv.batch == 6 and prefix.logits.shape[0] == 6
    means = head_means(model, PROMPTS)
    gen = dict(batch_size=6, stop_at_eos=False, fast_attention=fast)
    plain = generate_tokens(model, PROMPTS, 8, **gen)
    assert generate_tokens(model, PROMPTS, 8, prefixes=whole, **gen) == plain
    heads = [(0, 1), (1, 3), (2, 0), (2, 2)]
    with mask_heads(model, heads, "mean", values=means, positions="generated"):
        masked = generate_tokens(model, PROMPTS, 8, prefixes=whole, **gen)
    assert masked != plain  # the mask acts, so the comparison below could fail
    reference = generate_tokens(
        model, PROMPTS, 8, fwd_hooks=generated_position_hooks(heads, means), **gen
    )
    assert masked == reference


@pytest.mark.parametrize("fast", [True, False])
def test_stacked_prefix_under_last_position_masks_equals_whole_prompt_generation(model, fast):
    means = head_means(model, PROMPTS)
    prefixes = PromptPrefixes(model, PROMPTS, batch_size=6, fast_attention=fast)
    gen = dict(batch_size=6, stop_at_eos=False, fast_attention=fast)
    heads = [(0, 0), (1, 2), (2, 3)]
    reference = generate_tokens(
        model, PROMPTS, 8, fwd_hooks=last_position_hooks(heads, means), **gen
    )
    with mask_heads(model, heads, "mean", values=means, positions="last"):
        assert generate_tokens(model, PROMPTS, 8, prefixes=prefixes, **gen) == reference


def test_rows_with_no_prefix_token_are_a_piece_of_padding(model):
    """Prompts of one token leave nothing for the last-position prefix to read; beside long
    prompts they form their own piece, and generation still equals the hand-written hooks'."""
    (_, tokens, mask), *_ = batches(model, ONE, len(ONE), None)
    assert mask[:, :-1].sum(dim=1).min() == 0  # the one-token rows hold nothing before the last
    assert len(prefill_groups(mask[:, :-1].sum(1).tolist())) > 1
    means = head_means(model, ONE)
    prefixes = PromptPrefixes(model, ONE, batch_size=len(ONE))
    gen = dict(batch_size=len(ONE), stop_at_eos=False)
    heads = [(0, 0), (1, 2), (2, 3)]
    reference = generate_tokens(model, ONE, 8, fwd_hooks=last_position_hooks(heads, means), **gen)
    with mask_heads(model, heads, "mean", values=means, positions="last"):
        assert generate_tokens(model, ONE, 8, prefixes=prefixes, **gen) == reference
