"""Position-wise means (``position_mean``): each head's mean z per position counted from the end
of the prompt, against a hand computation on unpadded prompts, and the mask that uses them."""

from __future__ import annotations

import pytest
import torch

from interp_heads.errors import InputError
from interp_heads.heads import hook_z
from interp_heads.interventions.kinds import Rewrite
from interp_heads.interventions.masks import mask_heads
from interp_heads.interventions.means import head_means, position_means
from interp_heads.interventions.row_masks import RowMasks

PROMPTS = ["hello there", "abc", "the quick brown fox", "zz top"]


def _unpadded_z(model, prompt, layer):
    tokens = model.to_tokens(prompt, prepend_bos=model.cfg.default_prepend_bos)
    _, cache = model.run_with_cache(tokens, names_filter=hook_z(layer))
    return cache[hook_z(layer)][0]  # [pos head d_head]


def test_position_means_are_per_position_from_the_end_by_hand(tiny):
    got = position_means(tiny, PROMPTS, batch_size=3)  # two batches of different widths
    for layer in range(tiny.cfg.n_layers):
        zs = [_unpadded_z(tiny, p, layer) for p in PROMPTS]
        longest = max(len(z) for z in zs)
        assert got[layer].shape == (longest, tiny.cfg.n_heads, tiny.cfg.d_head)
        for j in range(longest):
            rows = [z[len(z) - 1 - j] for z in zs if len(z) > j]
            want = torch.stack(rows).mean(0)
            torch.testing.assert_close(got[layer][j], want, atol=1e-5, rtol=1e-5)
    # the pooled mean is their mean weighted by how many prompts reach each position
    zs = [_unpadded_z(tiny, p, 0) for p in PROMPTS]
    counts = torch.tensor([sum(len(z) > j for z in zs) for j in range(len(got[0]))])
    pooled = (got[0] * counts[:, None, None]).sum(0) / counts.sum()
    torch.testing.assert_close(pooled, head_means(tiny, PROMPTS)[0], atol=1e-5, rtol=1e-5)


def test_rewrite_aligns_rows_from_the_end_of_the_pass():
    offset = torch.arange(3.0)[:, None, None].expand(3, 1, 2)  # row j holds j
    z = torch.full((2, 5, 1, 2), 9.0)
    out = Rewrite(offset=offset).apply(z)
    assert out[0, :, 0, 0].tolist() == [2.0, 2.0, 2.0, 1.0, 0.0]  # farthest row before the table
    assert Rewrite(offset=offset).apply(z[:, -1:])[0, 0, 0, 0] == 0.0  # one position: the last
    assert Rewrite(offset=offset, coef=1.0).apply(z)[1, 3, 0, 1] == 10.0
    # a teacher-forced pass of prompt and answer: rows count back from each row's last prompt
    # token, the answer's positions after it take row 0
    from interp_heads.interventions.kinds import prompt_ends

    with prompt_ends(torch.tensor([2, 4])):
        out = Rewrite(offset=offset).apply(z)
    assert out[0, :, 0, 0].tolist() == [2.0, 1.0, 0.0, 0.0, 0.0]
    assert out[1, :, 0, 0].tolist() == [2.0, 2.0, 2.0, 1.0, 0.0]
    assert Rewrite(offset=offset).apply(z)[0, :, 0, 0].tolist() == [2.0, 2.0, 2.0, 1.0, 0.0]


def test_mask_replaces_each_position_by_its_mean_and_packed_masks_refuse(tiny):
    values = position_means(tiny, PROMPTS)
    prompt = PROMPTS[2]  # the longest: every position has its own row
    tokens = tiny.to_tokens(prompt, prepend_bos=tiny.cfg.default_prepend_bos)
    with mask_heads(tiny, ["L1H2"], "position_mean", values=values):
        _, cache = tiny.run_with_cache(tokens, names_filter=hook_z(1))
    z = cache[hook_z(1)][0, :, 2]
    torch.testing.assert_close(z, values[1].flip(0)[:, 2], atol=1e-6, rtol=1e-6)
    assert not torch.allclose(z[0], z[-1])  # not one pooled vector
    with pytest.raises(InputError, match="position_mean"):
        RowMasks.build(tiny, [(["L1H2"], "position_mean", values, 0)])
