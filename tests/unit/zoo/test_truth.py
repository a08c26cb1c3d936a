"""The batched enumeration against a brute force written here: one subset at a time, each masked
head's hook_z replaced by a TransformerLens hook, on the tiny zoo model."""

import math

import numpy as np
import pytest
import torch

from interp_heads.errors import InputError
from interp_heads.zoo.truth import enumerate_subsets, subset_masks, truth_batch

KINDS = ("zero", "mean", "position_mean", "resample", "counterfactual")


def _replacements(model, task, kind):
    """Per layer the z a masked head takes, ``[prompt, pos, head, d_head]``, computed here."""
    from interp_heads.interventions.kinds import get_kind
    from interp_heads.interventions.masks import rewrites

    b = truth_batch(model, task)
    _, clean = model.run_with_cache(b.clean)
    _, corr = model.run_with_cache(b.corrupted)
    out = {}
    for layer in range(model.cfg.n_layers):
        z = clean[f"blocks.{layer}.attn.hook_z"]
        if kind == "zero":
            out[layer] = torch.zeros_like(z)
        elif kind == "mean":  # over every prompt and position (no padding)
            out[layer] = z.mean(dim=(0, 1), keepdim=True).expand_as(z)
        elif kind == "position_mean":  # per position (every prompt has one length)
            out[layer] = z.mean(dim=0, keepdim=True).expand_as(z)
        elif kind == "counterfactual":
            out[layer] = corr[f"blocks.{layer}.attn.hook_z"]
        else:  # resample: each head's mean over the prompt its (seed 0) draw picked
            heads = [(la, h) for la in range(model.cfg.n_layers) for h in range(model.cfg.n_heads)]
            ab = get_kind("resample")
            values = ab.values(model, [e.prompt for e in task])
            rep = rewrites(heads, ab, values, 0)[layer][1].offset  # [head, d_head]
            out[layer] = rep[None, None].expand_as(z)
    return b, out


def _brute(model, b, repl, mask):
    n_heads = model.cfg.n_heads

    def replace(z, layer):
        z = z.clone()
        for h in range(n_heads):
            if not (mask >> (layer * n_heads + h)) & 1:
                z[:, :, h] = repl[layer][:, :, h]
        return z

    hooks = [(f"blocks.{la}.attn.hook_z", lambda z, hook, la=la: replace(z, la))
             for la in range(model.cfg.n_layers)]  # fmt: skip
    logits = model.run_with_hooks(b.clean, fwd_hooks=hooks)[:, -1].float()
    logp = logits.log_softmax(-1)[torch.arange(len(b)), b.answer]
    logit = logits[torch.arange(len(b)), b.answer]
    acc = (logits.argmax(-1) == b.answer).float()
    return {"logprob": logp.mean(), "logit": logit.mean(), "accuracy": acc.mean()}


@pytest.mark.parametrize("kind", KINDS)
def test_enumeration_matches_one_subset_at_a_time(tiny_zoo_model, kind):
    model = tiny_zoo_model.model
    task = tiny_zoo_model.held_out(12)
    got = enumerate_subsets(model, task, kind, rows=40)  # several forward passes
    n_total = model.cfg.n_layers * model.cfg.n_heads
    assert sorted(got.masks.tolist()) == list(range(2**n_total))
    b, repl = _replacements(model, task, kind)
    with torch.no_grad():
        for mask in range(2**n_total):
            want = _brute(model, b, repl, mask)
            for metric, value in want.items():
                assert got.value(mask, metric) == pytest.approx(float(value), abs=1e-4), (
                    kind,
                    mask,
                    metric,
                )
    # the unablated end is the plain model
    with torch.no_grad():
        plain = model(b.clean)[:, -1].float().log_softmax(-1)[torch.arange(len(b)), b.answer]
    assert got.value(2**n_total - 1) == pytest.approx(float(plain.mean()), abs=1e-5)


def test_more_than_the_limit_is_refused_and_max_size_enumerates_up_to_a_size():
    with pytest.raises(InputError, match="2\\^20"):
        subset_masks(21)
    masks = subset_masks(21, max_size=2)
    assert len(masks) == 1 + 21 + math.comb(21, 2) + 1
    assert masks[-1] == 2**21 - 1 and len(set(masks)) == len(masks)
    assert max(bin(m).count("1") for m in masks[:-1]) == 2


def test_enumeration_values_are_means_over_prompts(tiny_zoo_model):
    model = tiny_zoo_model.model
    task = tiny_zoo_model.held_out(8)
    e = enumerate_subsets(model, task, "zero")
    assert np.all((e.values["accuracy"] >= 0) & (e.values["accuracy"] <= 1))
    assert e.complete and e.n_prompts == 8
