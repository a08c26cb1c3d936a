"""Rows that read a shared prompt prefix in place (``models.backends.shared_prefix``) see what rows
with their own copy of it see.

The reference is TransformerLens' own attention (outside ``fast_attention``) over the copied
prefix (``StaticCache.copy_of``), which shares no code with the in-place path's attention. The
rows of each copy are fed different tokens, so a query routed to the wrong copy's slot would
change the result; rows leave mid-way, leaving holes in the copy grid.
"""

from __future__ import annotations

import pytest
import torch

from interp_heads.generation import fast_attention as fa
from interp_heads.generation.decode import batches, generate_tokens
from interp_heads.generation.prefix import PromptPrefixes
from interp_heads.interventions.kinds import get_kind
from interp_heads.interventions.masks import mask_heads
from interp_heads.interventions.row_masks import RowMasks, mask_rows
from interp_heads.models.backends import backend_of
from interp_heads.models.backends.shared_prefix import SharedPrefixCache
from interp_heads.testing.tiny import tiny_model
from tests.helpers import generated_position_hooks

PROMPTS = ["the quick brown fox jumps over", "a", "lorem ipsum " * 5, "xyz!", "one two three"]
COPIES = 3
HEADS = [[(0, 1), (1, 3)], [(2, 0), (2, 2), (1, 0)], []]  # one set per copy; the last none


@pytest.fixture(scope="module", params=["rotary", "standard"])
def model(request):
    return tiny_model(positional_embedding_type=request.param)


def _prefix(model, prompts=PROMPTS):
    """The prompts' pass but their last token, made on the fused path (it keeps rotated keys)."""
    _, tokens, mask = next(batches(model, prompts, len(prompts), None))
    with fa.fast_attention(model):
        kv, _ = backend_of(model).prompt_pass(model, tokens[:, :-1], mask[:, :-1])
    return kv, tokens, mask


def _steps(model, cache, tokens, mask, keep_after=2, steps=5, seed=0):
    """Each step's logits: the last prompt token of every copy, then random tokens (different in
    every row); after ``keep_after`` steps rows 1, 4 and 6 leave the batch."""
    gen = torch.Generator().manual_seed(seed)
    rows = tokens.shape[0] * COPIES
    step_input = tokens[:, -1:].repeat(COPIES, 1)
    full = mask.repeat(COPIES, 1)
    out = []
    for step in range(steps):
        logits = cache.step(step_input, torch.ones_like(step_input), full)
        out.append(logits)
        if step == keep_after:
            kept = torch.tensor([r for r in range(rows) if r not in (1, 4, 6)])
            assert cache.keep(kept)
            full, rows = full[kept], len(kept)
        step_input = torch.randint(0, model.cfg.d_vocab, (rows, 1), generator=gen)
        full = torch.cat([full, torch.ones_like(step_input)], dim=1)
    return out


def _cache(model, kv, shared: bool):
    backend = backend_of(model)
    batch = kv.batch * COPIES
    return backend.kv_cache(model, batch, kv, kv.length + 8, shared_prefix=shared)


def test_in_place_prefix_gives_transformer_lens_logits_over_a_copied_prefix(model):
    kv, tokens, mask = _prefix(model)
    reference = _steps(model, _cache(model, kv, shared=False), tokens, mask)  # TL's attention
    with fa.fast_attention(model):
        shared = _cache(model, kv, shared=True)
        assert isinstance(shared.cache, SharedPrefixCache)
        assert shared.cache.grid.empty is not None  # "a": one token, nothing in the prefix
        got = _steps(model, shared, tokens, mask)
    for a, b in zip(got, reference, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_attention_by_hand_gives_the_cpu_kernels_logits(model, monkeypatch):
    """The log-sum-exp attention written out (used off the CPU) against PyTorch's CPU kernel."""
    kv, tokens, mask = _prefix(model)
    with fa.fast_attention(model):
        kernel = _steps(model, _cache(model, kv, shared=True), tokens, mask)
        monkeypatch.setattr(fa, "_FLASH_CPU", None)
        by_hand = _steps(model, _cache(model, kv, shared=True), tokens, mask)
    for a, b in zip(by_hand, kernel, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_a_hooked_pattern_reads_every_rows_keys_whole(model):
    """A hook on the pattern sends its layer down TransformerLens' path, which gets every row's
    keys and values assembled from the prefix and the tail; the logits stay the same."""
    kv, tokens, mask = _prefix(model)
    reference = _steps(model, _cache(model, kv, shared=False), tokens, mask)
    seen = []
    hook = ("blocks.1.attn.hook_pattern", lambda p, hook: seen.append(p.shape[-1]))
    with fa.fast_attention(model), model.hooks(fwd_hooks=[hook]):
        got = _steps(model, _cache(model, kv, shared=True), tokens, mask)
    assert seen == [kv.length + 1 + i for i in range(5)]  # every position, each step
    for a, b in zip(got, reference, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_the_prefix_is_never_written_and_its_shape_is_all_transformer_lens_reads(model):
    kv, tokens, mask = _prefix(model)
    before = [(e.keys.clone(), e.values.clone(), e.rotated) for e in kv.entries]
    before = [(k, v, None if r is None else r.clone()) for k, v, r in before]
    with fa.fast_attention(model):
        cache = _cache(model, kv, shared=True)
        _steps(model, cache, tokens, mask)
    for e, (k, v, r) in zip(kv.entries, before, strict=True):
        assert torch.equal(e.keys, k) and torch.equal(e.values, v)
        assert r is None or torch.equal(e.rotated, r)
    entry = cache.cache.entries[0]
    assert entry.past_keys.shape == (
        entry.tail.batch,
        entry.length,
        *kv.entries[0].keys.shape[1::2],
    )
    with pytest.raises(AttributeError, match="not one tensor"):
        entry.past_keys.sum()


def test_packed_conditions_over_a_shared_prefix_equal_hand_written_hooks(model):
    """Three conditions packed as copies of one batch (``generate_tokens(copies=...)``, row
    masks at the generated positions), each against its own plain ``hook_z`` hook."""
    prefixes = PromptPrefixes(model, PROMPTS, batch_size=len(PROMPTS), whole=True)
    kind = get_kind("scale", scale_factor=1e-3)
    masks = RowMasks.build(model, [(h, kind, None, 0) for h in HEADS], positions="generated")
    n, gen = len(PROMPTS), dict(batch_size=len(PROMPTS), stop_at_eos=False)
    with mask_rows(model, masks, warn_if_idle=False) as handle:

        def on_batch(idx):
            handle.rows = [i // n for i in idx]

        packed = generate_tokens(
            model, PROMPTS, 6, prefixes=prefixes, copies=COPIES, on_batch=on_batch, **gen
        )
    for c, heads in enumerate(HEADS):
        hooks = generated_position_hooks(heads, kind="scale", factor=1e-3) if heads else []
        reference = generate_tokens(model, PROMPTS, 6, fwd_hooks=hooks, **gen)
        assert packed[c * n : (c + 1) * n] == reference
    assert packed[:n] != packed[2 * n :]  # the masks act, so the comparisons could fail


def test_weights_kept_in_linear_layout_follow_an_in_place_edit(model):
    """The fused path keeps W_Q ... W_O laid out for ``F.linear``; an in-place edit of a weight
    inside the block is seen at the next call, and the logits are TransformerLens' own."""
    _, tokens, mask = next(batches(model, PROMPTS, len(PROMPTS), None))
    w = model.blocks[0].attn.W_Q
    saved = w.detach().clone()
    before = set(vars(model.blocks[0].attn))
    try:
        with fa.fast_attention(model):
            model(tokens, attention_mask=mask)
            kept = fa.kept_layouts(model.blocks[0].attn)
            assert vars(model.blocks[0].attn).keys() - before == {"forward"}  # only the forward
            assert set(kept) == {"Q", "K", "V", "O"}  # the kept layout is what was used
            with torch.no_grad():
                w.mul_(3.0)
            fused = model(tokens, attention_mask=mask)
        reference = model(tokens, attention_mask=mask)
    finally:
        with torch.no_grad():
            w.copy_(saved)
    torch.testing.assert_close(fused, reference, rtol=1e-4, atol=1e-4)
    assert fa.kept_layouts(model.blocks[0].attn) is None  # dropped on exit
    assert vars(model.blocks[0].attn).keys() == before  # the layer as TransformerLens built it


def test_a_mask_at_the_generated_positions_on_one_copy_path(model):
    """One condition (``copies`` 1) over the in-place prefix equals its plain hook too."""
    prefixes = PromptPrefixes(model, PROMPTS, batch_size=len(PROMPTS), whole=True)
    gen = dict(batch_size=len(PROMPTS), stop_at_eos=False)
    heads = HEADS[1]
    reference = generate_tokens(
        model, PROMPTS, 6, fwd_hooks=generated_position_hooks(heads, kind="zero"), **gen
    )
    with mask_heads(model, heads, "zero", positions="generated"):
        assert generate_tokens(model, PROMPTS, 6, prefixes=prefixes, **gen) == reference
