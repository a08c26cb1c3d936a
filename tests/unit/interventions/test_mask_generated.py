"""Mask scope ``generated`` against a hand-written loop that does what pyvene's ``generate`` does.

pyvene's ``generate`` without ``intervene_on_prompt`` (the Cognitive Mirrors study's call) leaves
the prompt's forward pass alone and edits position 0 of every later pass, each of which reads
one token under the KV cache. The reference below is written from that definition with plain
TransformerLens hooks, one prompt at a time (no padding): an unhooked prompt pass that fills a
``HookedTransformerKeyValueCache``, then one single-token pass per new token with the heads
rewritten at its only (last) position.
"""

from __future__ import annotations

import warnings

import pytest
import torch

from interp_heads.errors import InputError
from interp_heads.execution.packed import PackedJob, generate_packed
from interp_heads.generation.decode import generate_tokens
from interp_heads.generation.prefix import PromptPrefixes
from interp_heads.interventions.kinds import get_kind
from interp_heads.interventions.masks import MaskNotFiring, mask_heads, mask_hooks
from interp_heads.interventions.means import head_means
from interp_heads.interventions.selections import RandomK
from interp_heads.models.tl_compat import HAS_HOOKED
from tests.helpers import last_position_hooks

PROMPTS = ["a", "say hello there", "xyz", "one two three four five six", "q?", "the cat"]
HEADS = [(0, 1), (1, 3), (2, 0), (2, 2)]
N_NEW = 8

hooked_only = pytest.mark.skipif(not HAS_HOOKED, reason="the reference uses TransformerLens' cache")


def _pyvene_like(model, prompt, heads, kind, means, factor=1e-4) -> list[int]:
    """Greedy ids: the prompt pass unhooked, each later single-token pass hooked."""
    from interp_heads.models.tl_compat import HookedTransformerKeyValueCache

    cache = HookedTransformerKeyValueCache.init_cache(model.cfg, model.cfg.device, 1)
    with torch.no_grad():
        logits = model(model.to_tokens(prompt), past_kv_cache=cache)
        out = [int(logits[0, -1].argmax())]
        with model.hooks(fwd_hooks=last_position_hooks(heads, means, kind, factor)):
            for _ in range(N_NEW - 1):
                logits = model(torch.tensor([[out[-1]]]), past_kv_cache=cache)
                out.append(int(logits[0, -1].argmax()))
    return out


def _gen(model, **kw):
    return generate_tokens(model, PROMPTS, N_NEW, batch_size=4, stop_at_eos=False, **kw)


@hooked_only
@pytest.mark.parametrize("kind", ["zero", "mean", "scale"])
def test_generated_scope_equals_the_pyvene_like_loop(tiny, kind):
    means = head_means(tiny, PROMPTS)
    values = means if kind == "mean" else None
    reference = [_pyvene_like(tiny, p, HEADS, kind, means) for p in PROMPTS]
    unmasked = _gen(tiny)
    with mask_heads(tiny, HEADS, kind, values=values, positions="generated"):
        got = _gen(tiny)
    assert got == reference
    assert [r[0] for r in got] == [r[0] for r in unmasked]  # the first token: the unmasked model's
    assert got != unmasked  # later tokens: masked (the check could fail)
    with mask_heads(tiny, HEADS, kind, values=values, positions="last"):
        assert _gen(tiny) != got  # masking the last prompt token too changes the answers


@hooked_only
@pytest.mark.parametrize("fast", [True, False])
def test_whole_prompt_prefix_equals_generation_over_the_prompt(tiny, fast):
    prefixes = PromptPrefixes(tiny, PROMPTS, batch_size=4, fast_attention=fast, whole=True)
    assert len(prefixes) == 2  # both batches, also the one of one-token prompts
    reference = [_pyvene_like(tiny, p, HEADS, "zero", None) for p in PROMPTS]
    with mask_heads(tiny, HEADS, "zero", positions="generated"):
        shared = _gen(tiny, prefixes=prefixes, fast_attention=fast)
    assert shared == reference
    assert _gen(tiny, prefixes=prefixes, fast_attention=fast) == _gen(tiny, fast_attention=fast)


@pytest.mark.parametrize("kind", ["zero", "mean", "resample", "scale"])
def test_generated_scope_packed_equals_plain(tiny, kind):
    values = {
        "mean": head_means(tiny, PROMPTS),
        "resample": head_means(tiny, PROMPTS, per_prompt=True),
    }.get(kind)
    jobs = [
        PackedJob(PROMPTS, [], values),
        PackedJob(PROMPTS, HEADS, values),
        PackedJob(PROMPTS, RandomK(3, 4, salt="t").select(6, 0), values, seed=1),
    ]
    alone = []
    for job in jobs:
        with mask_heads(
            tiny, job.heads, kind, values=job.values, seed=job.seed, positions="generated",
            warn_if_idle=False, scale_factor=0.01,
        ):  # fmt: skip
            alone.append(_gen(tiny))
    packed = generate_packed(
        tiny, jobs, get_kind(kind, scale_factor=0.01), N_NEW, pack_rows=5, positions="generated",
        stop_at_eos=False,
    )  # fmt: skip
    texts = [[tiny.tokenizer.decode(r, skip_special_tokens=True) for r in rows] for rows in alone]
    assert packed == texts
    assert len({tuple(map(tuple, rows)) for rows in alone}) == 3
    assert all(a[0] == b[0] for rows in alone[1:] for a, b in zip(rows, alone[0], strict=True))


def test_generated_scope_masks_nothing_without_the_cache_and_says_so(tiny):
    with pytest.warns(MaskNotFiring, match="generated"):
        with mask_heads(tiny, HEADS, "zero", positions="generated"):
            got = _gen(tiny, use_cache=False)
    assert got == _gen(tiny, use_cache=False)


def test_generated_scope_is_refused_as_plain_hooks(tiny):
    with pytest.raises(InputError, match="generated"):
        mask_hooks(tiny, HEADS, "zero", positions="generated")


def test_mask_effect_check_sees_a_generated_scope_mask(tiny):
    from interp_heads.sweep.checks import SweepWarning, check_mask_effect

    plan = [("TopK", 4, 0, HEADS)]  # (selection, k, seed, heads)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SweepWarning)
        check_mask_effect(tiny, "t", PROMPTS, plan, "zero", None, "generated")
