"""Masks at chosen positions (a list of ints, a token predicate) against a hand-written reference.

The reference generates greedily by hand, one full forward pass per new token (no KV cache, one
prompt at a time, so no padding), with a plain ``hook_z`` hook that zeroes the heads at the
positions computed from the tokens of that pass: written from the definition in
``interventions.positions``, not from its code.
"""

from __future__ import annotations

import pytest
import torch

from interp_heads.generation.decode import generate_tokens, tokenize_left_padded
from interp_heads.interventions.masks import mask_heads

PROMPTS = ["a", "say hello there", "xyz", "one two three four five six", "q?", "the cat"]
HEADS = [(0, 1), (1, 3), (2, 0), (2, 2)]
N_NEW = 6


def _reference(model, prompt: str, positions_of) -> list[int]:
    """Greedy ids with the heads zeroed at ``positions_of(token ids of the pass)`` in every pass."""
    tokens = model.to_tokens(prompt)
    out = []
    for _ in range(N_NEW):
        sel = positions_of(tokens[0].tolist())

        def make(hs, sel=sel):
            def hook(z, hook):
                z = z.clone()
                for p in sel:
                    for h in hs:
                        z[:, p, h] = 0.0
                return z

            return hook

        by_layer: dict[int, list[int]] = {}
        for layer, h in HEADS:
            by_layer.setdefault(layer, []).append(h)
        hooks = [(f"blocks.{layer}.attn.hook_z", make(hs)) for layer, hs in by_layer.items()]
        with torch.no_grad():
            logits = model.run_with_hooks(tokens, fwd_hooks=hooks)
        nxt = int(logits[0, -1].argmax())
        out.append(nxt)
        tokens = torch.cat([tokens, torch.tensor([[nxt]])], dim=1)
    return out


def _masked(model, positions, use_cache=True):
    with mask_heads(model, HEADS, "zero", positions=positions):
        return generate_tokens(
            model, PROMPTS, N_NEW, batch_size=4, use_cache=use_cache, stop_at_eos=False
        )


@pytest.mark.parametrize("use_cache", [True, False])
def test_non_negative_positions_equal_the_reference_with_and_without_cache(tiny, use_cache):
    chosen = [0, 2, 5]  # "a" has 1 token: its positions 2 and 5 are generated, masked when read
    want = [_reference(tiny, p, lambda ids: [i for i in chosen if i < len(ids)]) for p in PROMPTS]
    got = _masked(tiny, chosen, use_cache)
    assert got == want
    assert got != generate_tokens(tiny, PROMPTS, N_NEW, batch_size=4, stop_at_eos=False)


def test_negative_positions_count_from_the_end_of_each_pass(tiny):
    chosen = [-3, -1]
    want = [
        _reference(tiny, p, lambda ids: [len(ids) + i for i in chosen if -i <= len(ids)])
        for p in PROMPTS
    ]
    assert _masked(tiny, chosen, use_cache=False) == want
    assert _masked(tiny, [-1]) == _masked(tiny, "last")  # [-1] is "last", with the cache too


def test_token_predicate_equals_the_reference(tiny):
    def vowel(text: str) -> bool:
        return text in ("a", "e", "i", "o", "u")

    def decode(i):
        return tiny.tokenizer.decode([i])

    want = [
        _reference(tiny, p, lambda ids: [j for j, t in enumerate(ids) if vowel(decode(t))])
        for p in PROMPTS
    ]
    got = _masked(tiny, vowel)
    assert got == want
    assert got != _masked(tiny, [0])  # the predicate chose other positions


def test_positions_on_a_plain_forward_pass_with_left_padding(tiny):
    """``model(tokens, attention_mask=...)``: positions count each row's tokens, not the pads."""
    tokens, mask = tokenize_left_padded(tiny, PROMPTS)
    with torch.no_grad(), mask_heads(tiny, HEADS, "zero", positions=[1]):
        got = tiny(tokens, attention_mask=mask)
    pads = (mask == 0).sum(1).tolist()

    def make(layer):
        def hook(z, hook):  # the bridge names its hook points otherwise: the layer is bound here
            z = z.clone()
            for b, pad in enumerate(pads):
                for lay, h in HEADS:
                    if lay == layer and pad + 1 < z.shape[1]:
                        z[b, pad + 1, h] = 0.0
            return z

        return hook

    layers = sorted({layer for layer, _ in HEADS})
    with torch.no_grad():
        want = tiny.run_with_hooks(
            tokens,
            attention_mask=mask,
            fwd_hooks=[(f"blocks.{layer}.attn.hook_z", make(layer)) for layer in layers],
        )
    real = mask.bool()
    assert torch.allclose(got[real], want[real], atol=1e-5)
    assert not tiny._forward_pre_hooks and not tiny._forward_hooks  # removed on exit


@pytest.mark.parametrize(
    "bad, match",
    [
        ([], "non-empty list"),
        ([1.5], "list of ints"),
        ([True], "list of ints"),
        ([0, 0], "twice"),
        ("middle", "unknown mask positions"),
        (3, "positions must be"),
    ],
)
def test_bad_positions_are_refused(tiny, untyped, bad, match):
    with pytest.raises(ValueError, match=match):
        with mask_heads(tiny, HEADS, "zero", positions=bad):
            pass
