"""On SmolLM2 (GQA, 9 query / 3 key-value heads): the fused attention path equals TransformerLens'."""

from __future__ import annotations

import pytest
import torch
from transformer_lens.past_key_value_caching import HookedTransformerKeyValueCache

from interp_heads.generation.decode import generate_tokens, tokenize_left_padded
from interp_heads.generation.fast_attention import fast_attention
from interp_heads.interventions.masks import mask_heads
from interp_heads.interventions.means import head_means
from interp_heads.interventions.selections import RandomK
from interp_heads.tasks.prompts import render
from interp_heads.testing.tiny import MIXED_PROMPTS as PROMPTS

pytestmark = pytest.mark.slow


@torch.inference_mode()
def test_logits_within_1e4_with_padding_and_cache(smollm):
    tokens, mask = tokenize_left_padded(smollm, render(smollm, PROMPTS))

    def run():
        full = smollm(tokens, attention_mask=mask)
        cache = HookedTransformerKeyValueCache.init_cache(
            smollm.cfg, smollm.cfg.device, tokens.shape[0]
        )
        steps = [smollm(tokens, attention_mask=mask, past_kv_cache=cache)[:, -1]]
        for _ in range(4):
            nxt = steps[-1].argmax(-1)[:, None]
            steps.append(
                smollm(nxt, attention_mask=torch.ones_like(nxt), past_kv_cache=cache)[:, -1]
            )
        return full, torch.stack(steps)

    want, want_steps = run()
    with fast_attention(smollm):
        got, got_steps = run()
    assert (got - want)[mask.bool()].abs().max() < 1e-4
    assert (got_steps - want_steps).abs().max() < 1e-4


def test_masked_greedy_tokens_equal(smollm):
    prompts = render(smollm, PROMPTS)
    heads = RandomK(30, 9).select(64, 0)
    means = head_means(smollm, prompts)
    std = generate_tokens(smollm, prompts, 8, stop_at_eos=False, fast_attention=False)
    fast = generate_tokens(smollm, prompts, 8, stop_at_eos=False, fast_attention=True)
    assert fast == std
    with mask_heads(smollm, heads, "mean", values=means):
        std_m = generate_tokens(smollm, prompts, 8, stop_at_eos=False, fast_attention=False)
        fast_m = generate_tokens(smollm, prompts, 8, stop_at_eos=False, fast_attention=True)
    assert fast_m == std_m and std_m != std
