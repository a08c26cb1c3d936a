"""``mask_heads`` as a user calls it: what it accepts as heads, its default kind, its hooks.

References are independent of ``interventions.masks``: hand-written ``hook_z`` hooks and means
computed from a cache, not the module's own hooks.
"""

from __future__ import annotations

import pytest
import torch

from interp_heads.attribution.scores import HeadScores
from interp_heads.generation.decode import generate, tokenize_left_padded
from interp_heads.interventions.masks import mask_heads, mask_hooks

PROMPTS = ["a", "say hello there", "xyz", "one two three four five six"]


def _scores(tiny) -> HeadScores:
    s = torch.zeros(tiny.cfg.n_layers, tiny.cfg.n_heads)
    s[2, 1], s[0, 3], s[1, 0] = 3.0, -2.0, 1.0  # by |score|: L2H1, L0H3, L1H0
    return HeadScores(s, "hand", "t")


def _zeroed(tiny, heads, tokens, mask):
    """Logits with ``heads`` zeroed on hook_z, by a hand-written hook."""

    def make(layer):
        def hook(z, hook):
            z = z.clone()
            for lay, h in heads:
                if lay == layer:
                    z[:, :, h] = 0.0
            return z

        return hook

    layers = sorted({layer for layer, _ in heads})
    with torch.no_grad():
        return tiny.run_with_hooks(
            tokens,
            attention_mask=mask,
            fwd_hooks=[(f"blocks.{layer}.attn.hook_z", make(layer)) for layer in layers],
        )


def test_head_scores_with_k_labels_and_pairs_mask_the_same_heads(tiny):
    tokens, mask = tokenize_left_padded(tiny, PROMPTS)
    want = _zeroed(tiny, [(2, 1), (0, 3)], tokens, mask)
    for heads, kw in [
        (_scores(tiny), {"k": 2}),
        (_scores(tiny).top(2), {}),
        (["L2H1", "L0H3"], {}),
        ("L2H1,L0H3", {}),
    ]:
        with torch.no_grad(), mask_heads(tiny, heads, "zero", **kw):
            got = tiny(tokens, attention_mask=mask)
        assert torch.equal(got, want), heads
    assert not torch.allclose(want, _zeroed(tiny, [(2, 1)], tokens, mask))


def test_exported_fwd_hooks_give_the_same_logits_as_the_block(tiny):
    tokens, mask = tokenize_left_padded(tiny, PROMPTS)
    heads = ["L0H1", "L2H3", "L1H0"]
    for kind, positions in [("zero", "all"), ("mean", "last"), ("scale", "all")]:
        values = PROMPTS if kind == "mean" else None
        hooks = mask_hooks(tiny, heads, kind, values=values, positions=positions)
        assert all(name.endswith("attn.hook_z") and callable(fn) for name, fn in hooks)
        with torch.no_grad():
            composed = tiny.run_with_hooks(tokens, attention_mask=mask, fwd_hooks=hooks)
            with mask_heads(tiny, heads, kind, values=values, positions=positions):
                block = tiny(tokens, attention_mask=mask)
            plain = tiny(tokens, attention_mask=mask)
        assert torch.equal(composed, block)
        assert not torch.allclose(composed, plain)
    with torch.no_grad():  # the hand reference for zero on every position
        composed = tiny.run_with_hooks(
            tokens, attention_mask=mask, fwd_hooks=mask_hooks(tiny, [(1, 2)], "zero")
        )
    assert torch.equal(composed, _zeroed(tiny, [(1, 2)], tokens, mask))
    with pytest.raises(ValueError, match="only `with mask_heads"):
        mask_hooks(tiny, heads, "zero", positions=[0, 1])


def test_default_kind_is_mean_as_in_the_cli_and_values_can_be_prompts(tiny):
    tokens, mask = tokenize_left_padded(tiny, PROMPTS)
    with pytest.raises(ValueError, match=r"kind='mean' \(the default.*values=prompts"):
        with mask_heads(tiny, [(1, 0)]):
            pass
    _, cache = tiny.run_with_cache(tokens, attention_mask=mask)
    z = cache["blocks.1.attn.hook_z"][mask.bool()]  # [real positions, head, d_head]
    mean = z[:, 0].mean(0)

    def hook(z, hook):
        z = z.clone()
        z[:, :, 0] = mean
        return z

    with torch.no_grad():
        want = tiny.run_with_hooks(
            tokens, attention_mask=mask, fwd_hooks=[("blocks.1.attn.hook_z", hook)]
        )
        with mask_heads(tiny, [(1, 0)], values=PROMPTS):  # the default kind, values from prompts
            got = tiny(tokens, attention_mask=mask)
    assert torch.allclose(got, want, atol=1e-5)
    assert not torch.allclose(got, _zeroed(tiny, [(1, 0)], tokens, mask), atol=1e-3)


@pytest.mark.parametrize(
    "heads, kw, match",
    [
        ([(0, 1), (0, 1)], {}, "L0H1 twice"),
        (["L0H1", (0, 1)], {}, "L0H1 twice"),
        ([(0.0, 1)], {}, r"heads\[0\].*integers"),
        ([(0, 1.5)], {}, r"heads\[0\].*integers"),
        ([(True, 1)], {}, r"heads\[0\].*integers"),
        ([(0, 1, 2)], {}, r"heads\[0\].*pair"),
        ([7], {}, r"heads\[0\]"),
        (None, {}, "heads must be"),
        ("scores", {}, "mask with k="),
        ("scores", {"k": 2.5}, "k must be an integer"),
        ([(0, 1)], {"k": 2}, "already a list"),
    ],
)
def test_bad_heads_are_refused(tiny, untyped, heads, kw, match):
    heads = _scores(tiny) if heads == "scores" else heads
    with pytest.raises(ValueError, match=match):
        with mask_heads(tiny, heads, "zero", **kw):
            pass


def test_numpy_and_tensor_integers_are_heads(tiny):
    np = pytest.importorskip("numpy")
    with mask_heads(tiny, [(np.int64(0), torch.tensor(1))], "zero") as stats:
        generate(tiny, ["ab"], 1)
    assert stats["heads"] == [(0, 1)]
