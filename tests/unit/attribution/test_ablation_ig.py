"""``ablation_ig``: integrated gradients along every head's z -> task mean, all heads together.

References are plain forward hooks and ``interp_heads.interventions.masks.head_means``, independent of the
implementation: the path derivative d f / d alpha by central finite differences, and completeness
(the scores sum to f(clean) - f(all heads mean-ablated)).
"""

from __future__ import annotations

import pytest
import torch

from interp_heads.attribution import attribute_heads, make_batches
from interp_heads.attribution.inputs import answer_logprob
from interp_heads.attribution.paths import ablation_ig_scores, path_gradients, task_means
from interp_heads.interventions.means import head_means
from interp_heads.tasks.prompts import render
from interp_heads.tasks.schema import Example, Task

PROMPTS = ["The capital of France is ", "Bob gave the cat to the ", "Sun rises in the east and "]
TASK = Task(
    "plain",
    [Example(str(i), "plain", p, a) for i, (p, a) in enumerate(zip(PROMPTS, "PAS", strict=True))],
)


def _f_scaled(model, batches, means, alpha):
    """Mean answer log-prob with every head's z <- r + alpha (z - r) at every layer (plain hooks)."""

    def hook(z, hook):
        r = torch.stack([means[hook.layer()][h] for h in range(z.shape[2])])
        return r + alpha * (z - r)

    total, n = 0.0, 0
    for b in batches:
        with torch.no_grad():
            logits = model.run_with_hooks(
                b.clean, attention_mask=b.mask, fwd_hooks=[(lambda n: n.endswith("hook_z"), hook)]
            )
        total += float(answer_logprob(logits[:, -1], b).sum())
        n += len(b)
    return total / n


def _setup(tiny):
    batches = make_batches(tiny, TASK, batch_size=2, corrupted=False, fmt="plain")
    means = head_means(tiny, render(tiny, PROMPTS, fmt="plain"))
    return batches, means


def test_task_means_match_head_means(tiny):
    batches, means = _setup(tiny)
    ours = task_means(tiny, batches)
    for layer in range(tiny.cfg.n_layers):
        assert torch.allclose(ours[layer], means[layer], atol=1e-5)


@pytest.mark.parametrize("alpha", [0.25, 0.7])
def test_path_terms_sum_to_the_path_derivative(tiny, alpha):
    batches, means = _setup(tiny)
    r = task_means(tiny, batches)
    terms = sum(path_gradients(tiny, b, r, alpha)[0] for b in batches) / len(PROMPTS)
    eps = 1e-3
    deriv = (
        _f_scaled(tiny, batches, means, alpha + eps) - _f_scaled(tiny, batches, means, alpha - eps)
    ) / (2 * eps)
    assert abs(float(terms.sum()) - deriv) < 2e-3 * max(1.0, abs(deriv))


def test_completeness(tiny):
    batches, means = _setup(tiny)
    total = float(ablation_ig_scores(tiny, batches, steps=32).sum())
    want = _f_scaled(tiny, batches, means, 1.0) - _f_scaled(tiny, batches, means, 0.0)
    assert abs(total - want) < 1e-2 * max(1.0, abs(want))
    coarse = float(ablation_ig_scores(tiny, batches, steps=1).sum())
    assert abs(coarse - want) > abs(total - want)  # one midpoint step is a cruder integral


def test_method_registered_and_signed(tiny):
    s = attribute_heads(tiny, TASK, "ablation_ig", fmt="plain", steps=4)
    assert s.rank_by == "signed" and s.provenance["steps"] == 4 and "4 midpoint" in s.target
    refined = attribute_heads(tiny, TASK, "ablation_ig", fmt="plain", steps=4, refine=2)
    assert refined.method == "ablation_ig+mean_ablation@2"
    with pytest.raises(ValueError, match="ablation='mean'"):
        attribute_heads(tiny, TASK, "ablation_ig", ablation="zero")
    with pytest.raises(ValueError, match="steps"):
        ablation_ig_scores(tiny, make_batches(tiny, TASK, corrupted=False), steps=0)
