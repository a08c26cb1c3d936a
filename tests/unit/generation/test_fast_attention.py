"""The fused attention path against TransformerLens' own: logits, hooks, masks, KV cache, fallback."""

from __future__ import annotations

import pytest
import torch
from transformer_lens.past_key_value_caching import HookedTransformerKeyValueCache

from interp_heads.generation.decode import generate_tokens, tokenize_left_padded
from interp_heads.generation.fast_attention import fast_attention
from interp_heads.interventions.masks import mask_heads
from interp_heads.interventions.means import head_means
from interp_heads.testing.tiny import tiny_model

PROMPTS = ["a", "say hello there", "xyz", "one two three four five six", "q?"]


@pytest.fixture(params=[2, None], ids=["gqa", "mha"])
def model(request):
    return tiny_model(n_key_value_heads=request.param)


def _cached_logits(model, tokens, mask, steps=5):
    cache = HookedTransformerKeyValueCache.init_cache(model.cfg, model.cfg.device, tokens.shape[0])
    out = [model(tokens, attention_mask=mask, past_kv_cache=cache)[:, -1]]
    for _ in range(steps):
        nxt = out[-1].argmax(-1)[:, None]
        out.append(model(nxt, attention_mask=torch.ones_like(nxt), past_kv_cache=cache)[:, -1])
    return torch.stack(out)


@torch.inference_mode()
def test_logits_equal_standard_path_with_padding_and_cache(model):
    tokens, mask = tokenize_left_padded(model, PROMPTS)
    real = mask.bool()
    want = model(tokens, attention_mask=mask)
    want_cached = _cached_logits(model, tokens, mask)
    with fast_attention(model) as n:
        got = model(tokens, attention_mask=mask)
        got_cached = _cached_logits(model, tokens, mask)
        got_unpadded = model(tokens[3:4])
    assert n == model.cfg.n_layers
    assert (got - want)[real].abs().max() < 1e-4
    assert (got_cached - want_cached).abs().max() < 1e-4
    assert (got_unpadded - model(tokens[3:4])).abs().max() < 1e-4
    assert all("forward" not in vars(b.attn) for b in model.blocks)  # restored on exit


@pytest.mark.parametrize("method", ["zero", "mean", "resample"])
def test_masked_generation_equals_standard_path(model, method):
    values = {
        "zero": None,
        "mean": head_means(model, PROMPTS),
        "resample": head_means(model, PROMPTS, per_prompt=True),
    }
    heads = [(0, 1), (1, 3), (2, 0), (2, 2)]
    for use_cache in (True, False):
        with mask_heads(model, heads, method, values=values[method]):
            std = generate_tokens(
                model,
                PROMPTS,
                8,
                batch_size=3,
                use_cache=use_cache,
                stop_at_eos=False,
                fast_attention=False,
            )
            fast = generate_tokens(
                model,
                PROMPTS,
                8,
                batch_size=3,
                use_cache=use_cache,
                stop_at_eos=False,
                fast_attention=True,
            )
        assert fast == std


@torch.inference_mode()
def test_hooks_fire_with_the_same_tensors_and_pattern_hooks_fall_back(model):
    tokens, mask = tokenize_left_padded(model, PROMPTS[:3])
    names = ("hook_q", "hook_k", "hook_v", "hook_rot_q", "hook_rot_k", "hook_z")
    wanted = lambda n: any(n.endswith(s) for s in names)  # noqa: E731
    _, std = model.run_with_cache(tokens, attention_mask=mask, names_filter=wanted)
    with fast_attention(model):
        _, fast = model.run_with_cache(tokens, attention_mask=mask, names_filter=wanted)
        _, pattern = model.run_with_cache(
            tokens, attention_mask=mask, names_filter=lambda n: n.endswith("hook_pattern")
        )
    assert set(fast.keys()) == set(std.keys())
    for name in std.keys():
        assert (fast[name] - std[name]).abs().max() < 1e-5, name
    assert (
        len(pattern.keys()) == model.cfg.n_layers
    )  # the pattern hook made each layer take TL's path


def test_unsupported_configs_keep_the_standard_path():
    model = tiny_model(attn_scores_soft_cap=30.0)
    with fast_attention(model) as n:
        assert n == 0


@torch.inference_mode()
def test_switching_paths_mid_generation_keeps_the_cache_consistent(model):
    tokens, mask = tokenize_left_padded(model, PROMPTS)
    want = _cached_logits(model, tokens, mask, steps=4)
    cache = HookedTransformerKeyValueCache.init_cache(model.cfg, model.cfg.device, tokens.shape[0])
    hook = [
        (f"blocks.{layer}.attn.hook_pattern", lambda x, hook: x)
        for layer in range(model.cfg.n_layers)
    ]
    with fast_attention(model):
        out = [model(tokens, attention_mask=mask, past_kv_cache=cache)[:, -1]]
        for step in range(4):
            nxt = out[-1].argmax(-1)[:, None]
            ones = torch.ones_like(nxt)
            if step == 1:  # one step through TL's path: the rotated-key side cache goes stale
                out.append(
                    model.run_with_hooks(
                        nxt, attention_mask=ones, past_kv_cache=cache, fwd_hooks=hook
                    )[:, -1]
                )
            else:
                out.append(model(nxt, attention_mask=ones, past_kv_cache=cache)[:, -1])
    assert (torch.stack(out) - want).abs().max() < 1e-4
