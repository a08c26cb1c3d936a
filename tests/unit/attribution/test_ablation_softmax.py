"""``ablation_atp`` with ``rivals``: linearised logits, exact log-softmax.

The reference is independent of the implementation: plain forward hooks that move one head's
``hook_z`` towards its task mean (``interp_heads.interventions.masks.head_means``) by +-eps give, by central
finite differences, that head's linearised change of *every* logit; the log-softmax of the clean
logits plus that change is the drop the method must return when every other token is a rival.
"""

from __future__ import annotations

import pytest
import torch

from interp_heads.attribution import attribute_heads, make_batches
from interp_heads.attribution.gradients import ablation_atp_scores
from interp_heads.attribution.softmax_atp import ablation_softmax_scores
from interp_heads.errors import InputError
from interp_heads.interventions.means import head_means
from interp_heads.tasks.prompts import render
from interp_heads.tasks.schema import Example, Task

PROMPTS = ["The capital of France is ", "Bob gave the cat to the ", "Sun rises in the east and "]
TASK = Task(
    "plain",
    [Example(str(i), "plain", p, a) for i, (p, a) in enumerate(zip(PROMPTS, "PAS", strict=True))],
)
HEADS = [(0, 0), (1, 2), (2, 3)]


def _logits_moved(model, b, means, layer, head, t):
    """Last-position logits with ``z[layer, head] <- z + t (mean - z)`` at every position."""

    def hook(z, hook):
        z = z.clone()
        z[:, :, head] += t * (means[layer][head] - z[:, :, head])
        return z

    with torch.no_grad():
        logits = model.run_with_hooks(
            b.clean, attention_mask=b.mask, fwd_hooks=[(f"blocks.{layer}.attn.hook_z", hook)]
        )
    return logits[:, -1].double()


def _reference_drop(model, batches, means, layer, head, eps=1e-3):
    """Drop of log p(answer) under the finite-difference linearisation of the logits."""
    total, n = 0.0, 0
    for b in batches:
        clean = _logits_moved(model, b, means, layer, head, 0.0)
        slope = (
            _logits_moved(model, b, means, layer, head, eps)
            - _logits_moved(model, b, means, layer, head, -eps)
        ) / (2 * eps)
        before = clean.log_softmax(-1).gather(1, b.answer[:, None])
        after = (clean + slope).log_softmax(-1).gather(1, b.answer[:, None])
        total += float((before - after).sum())
        n += len(b)
    return total / n


def _setup(tiny):
    batches = make_batches(tiny, TASK, batch_size=2, corrupted=False, fmt="plain")
    return batches, head_means(tiny, render(tiny, PROMPTS, fmt="plain"))


@pytest.mark.parametrize(("layer", "head"), HEADS)
def test_every_rival_gives_the_linearised_logit_drop(tiny, layer, head):
    batches, means = _setup(tiny)
    ours = ablation_softmax_scores(tiny, batches, "mean", rivals=tiny.cfg.d_vocab - 1)
    want = _reference_drop(tiny, batches, means, layer, head)
    assert abs(float(ours[layer, head]) - want) < 2e-3 * max(1.0, abs(want))


def test_few_rivals_keep_the_first_order_term(tiny):
    """To first order every variant is plain ablation_atp: shrink the move, compare slopes."""
    batches, _ = _setup(tiny)
    scale = 1e-3
    tiny_moves = _shrunk(tiny, scale)
    soft = ablation_softmax_scores(tiny_moves, batches, "zero", rivals=2)
    plain = ablation_atp_scores(tiny_moves, batches, "zero")
    assert torch.allclose(soft, plain, atol=1e-6 + 1e-3 * float(plain.abs().max()))


def _shrunk(model, scale):
    """``model`` with every head's output projection scaled: ablating a head moves the logits little."""
    for block in model.blocks:
        block.attn.W_O.data *= scale
    return model


def test_batching_does_not_change_scores(tiny):
    one = make_batches(tiny, TASK, batch_size=1, corrupted=False, fmt="plain")
    three = make_batches(tiny, TASK, batch_size=3, corrupted=False, fmt="plain")
    per: list[torch.Tensor] = []
    a = ablation_softmax_scores(tiny, one, "mean", rivals=3)
    b = ablation_softmax_scores(tiny, three, "mean", rivals=3, per_example=per)
    assert torch.allclose(a, b, atol=1e-5)
    assert per[0].shape == (len(PROMPTS), *a.shape) and torch.allclose(per[0].mean(0), b)


def test_attribute_heads_takes_rivals(tiny):
    s = attribute_heads(tiny, TASK, "ablation_atp", fmt="plain", rivals=1, exact_layers=0)
    batches, _ = _setup(tiny)
    assert torch.allclose(s.scores, ablation_softmax_scores(tiny, batches, "mean", rivals=1))
    assert s.provenance["rivals"] == 1
    assert "log-softmax" in s.target
    with pytest.raises(InputError, match="rivals"):
        attribute_heads(tiny, TASK, "gradxact", fmt="plain", rivals=1)


def test_config_takes_rivals_only_for_ablation_atp_and_keeps_old_digests():
    from interp_heads.config.digest import DIGEST_IF_SET
    from interp_heads.config.run_config import RunConfig
    from interp_heads.errors import PipelineError

    # folders made before the option existed ranked by plain first order: rivals = 0 is left out
    # of the digest and keeps them; the default (one rival with mean ablation) is another config
    assert DIGEST_IF_SET["rivals"] == 0
    default = RunConfig(tasks=["retrieval"]).digest()
    first_order = RunConfig(tasks=["retrieval"], rivals=0).digest()
    one = RunConfig(tasks=["retrieval"], rivals=1).digest()
    assert len({default, first_order, one}) == 3
    with pytest.raises(PipelineError, match="rivals"):
        RunConfig(tasks=["retrieval"], attribution="gradxact", rivals=1)
