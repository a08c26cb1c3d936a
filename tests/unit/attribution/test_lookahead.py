"""``ablation_atp`` with ``lookahead = d``: a head's mean ablation run exactly through d blocks.

The references are built from plain full-model forward passes with hooks, not from the batched
``start_at_layer`` passes the method uses: the patched run's residual stream at
``blocks.{l+d}.hook_resid_pre``, the clean run's gradient of log p(answer) there, and (with every
token a rival) central finite differences of the logits along the residual change. The task means
come from the sweep's own ``interventions.means.head_means``.
"""

from __future__ import annotations

import pytest
import torch

from interp_heads.attribution import attribute_heads, make_batches, mean_ablation_scores
from interp_heads.attribution.inputs import answer_logprob
from interp_heads.attribution.lookahead import lookahead_scores
from interp_heads.errors import InputError
from interp_heads.heads import hook_z
from interp_heads.interventions.means import head_means
from interp_heads.tasks.prompts import render
from interp_heads.tasks.schema import Example, Task

PROMPTS = ["The capital of France is ", "Bob gave the cat to the ", "Sun rises in the east and "]
TASK = Task(
    "plain",
    [Example(str(i), "plain", p, a) for i, (p, a) in enumerate(zip(PROMPTS, "PAS", strict=True))],
)


def _setup(tiny):
    batches = make_batches(tiny, TASK, batch_size=2, corrupted=False, fmt="plain")
    return batches, head_means(tiny, render(tiny, PROMPTS, fmt="plain"))


def _patched_resid(model, b, means, layer, head, at):
    """``blocks.{at}.hook_resid_pre`` of a full forward pass with the head mean-ablated."""
    got = {}

    def patch(z, hook):
        z = z.clone()
        z[:, :, head] = means[layer][head]
        return z

    def keep(x, hook):
        got["r"] = x.detach()

    with torch.no_grad():
        model.run_with_hooks(
            b.clean,
            attention_mask=b.mask,
            fwd_hooks=[(hook_z(layer), patch), (f"blocks.{at}.hook_resid_pre", keep)],
        )
    return got["r"]


def _logits_from(model, b, at, resid):
    """Last-position logits with ``blocks.{at}.hook_resid_pre`` replaced by ``resid``; the clean
    value and the leaf that stands for it when ``resid`` is None."""
    got = {}

    def put(x, hook):
        got["clean"] = x.detach()
        got["leaf"] = (x.detach() if resid is None else resid).clone().requires_grad_(True)
        return got["leaf"]

    with torch.enable_grad():
        logits = model.run_with_hooks(
            b.clean, attention_mask=b.mask, fwd_hooks=[(f"blocks.{at}.hook_resid_pre", put)]
        )
    return logits[:, -1].double(), got


def _hand(model, batches, means, layer, head, depth, every_rival=False, eps=1e-3):
    total, n = 0.0, 0
    for b in batches:
        at = layer + depth
        delta = _patched_resid(model, b, means, layer, head, at)
        logits, got = _logits_from(model, b, at, None)
        delta = delta - got["clean"]
        if every_rival:  # the logits linearised along delta, the log-softmax exact
            with torch.no_grad():
                up = _logits_from(model, b, at, got["clean"] + eps * delta)[0]
                down = _logits_from(model, b, at, got["clean"] - eps * delta)[0]
            after = (logits.detach() + (up - down) / (2 * eps)).log_softmax(-1)
            before = logits.detach().log_softmax(-1)
            drop = (before - after).gather(1, b.answer[:, None])
        else:
            (grad,) = torch.autograd.grad(answer_logprob(logits, b).sum(), got["leaf"])
            drop = -(delta * grad).sum()
        total += float(drop.sum())
        n += len(b)
    return total / n


@pytest.mark.parametrize("depth", [1, 2])
def test_lookahead_is_exact_through_d_blocks_then_first_order(tiny, depth):
    batches, means = _setup(tiny)
    ours = lookahead_scores(tiny, batches, depth)
    for layer in range(tiny.cfg.n_layers - depth):
        for head in range(tiny.cfg.n_heads):
            want = _hand(tiny, batches, means, layer, head, depth)
            assert abs(float(ours[layer, head]) - want) < 1e-5 * max(1.0, abs(want))


def test_every_rival_takes_the_log_softmax_of_the_linearised_logits(tiny):
    batches, means = _setup(tiny)
    ours = lookahead_scores(tiny, batches, 1, rivals=tiny.cfg.d_vocab - 1)
    for layer, head in [(0, 0), (0, 3), (1, 2)]:
        want = _hand(tiny, batches, means, layer, head, 1, every_rival=True)
        assert abs(float(ours[layer, head]) - want) < 2e-3 * max(1.0, abs(want))


def test_the_last_layers_and_full_depth_are_exact_mean_ablation(tiny):
    batches, _ = _setup(tiny)
    exact, _ = mean_ablation_scores(tiny, batches, objective="logprob")
    last = tiny.cfg.n_layers - 1
    assert torch.allclose(lookahead_scores(tiny, batches, 1)[last], exact[last], atol=1e-5)
    full = lookahead_scores(tiny, batches, tiny.cfg.n_layers, rivals=2)
    assert torch.allclose(full, exact, atol=1e-5)
    assert not torch.allclose(lookahead_scores(tiny, batches, 1), exact, atol=1e-3)


def test_batching_and_per_example(tiny):
    one = make_batches(tiny, TASK, batch_size=1, corrupted=False, fmt="plain")
    three = make_batches(tiny, TASK, batch_size=3, corrupted=False, fmt="plain")
    per: list[torch.Tensor] = []
    a = lookahead_scores(tiny, one, 1, max_rows=2)
    b = lookahead_scores(tiny, three, 1, per_example=per)
    assert torch.allclose(a, b, atol=1e-5)
    assert per[0].shape == (len(PROMPTS), *a.shape) and torch.allclose(per[0].mean(0), b)


def test_through_attribute_heads(tiny):
    scores = attribute_heads(tiny, TASK, "ablation_atp", fmt="plain", lookahead=1, exact_layers=0)
    batches, _ = _setup(tiny)
    assert torch.allclose(scores.scores, lookahead_scores(tiny, batches, 1, rivals=1), atol=1e-5)
    assert scores.provenance["rivals"] == 1  # the default, with mean ablation
    assert scores.provenance["lookahead"] == 1 and "exactly through 1 block" in scores.target
    with pytest.raises(InputError, match="lookahead.*ablation 'mean'"):
        attribute_heads(tiny, TASK, "ablation_atp", fmt="plain", ablation="zero", lookahead=1)
    with pytest.raises(InputError, match="lookahead needs attribution 'ablation_atp'"):
        attribute_heads(tiny, TASK, "gradxact", fmt="plain", lookahead=1)
    with pytest.raises(InputError, match="lookahead must be in 0..3"):
        attribute_heads(tiny, TASK, "ablation_atp", fmt="plain", lookahead=4)
