"""``ablation_atp``: attribution patching against the ablation baseline (no corrupted prompts).

References are independent of the implementation: finite differences of the answer log-prob along
the straight line from ``z`` to the ablation value, computed with plain forward hooks, and exact
mean ablation (``mean_ablation_scores``).
"""

from __future__ import annotations

import pytest
import torch

from interp_heads.attribution import attribute_heads, make_batches, mean_ablation_scores
from interp_heads.attribution.gradients import ablation_atp_scores, gradxact_scores
from interp_heads.attribution.inputs import answer_logprob
from interp_heads.heads import hook_z
from interp_heads.interventions.kinds.resample import derangement
from interp_heads.interventions.means import head_means
from interp_heads.tasks.prompts import render
from interp_heads.tasks.schema import Example, Task

PROMPTS = ["The capital of France is ", "Bob gave the cat to the ", "Sun rises in the east and "]
TASK = Task(
    "plain",
    [Example(str(i), "plain", p, a) for i, (p, a) in enumerate(zip(PROMPTS, "PAS", strict=True))],
)


def _logprob_along(model, batches, layer, head, target, eps):
    """Mean answer log-prob with z[layer, head] <- z + eps * (target - z) (target per example)."""
    total, n = 0.0, 0
    for b in batches:
        tgt = target(b)

        def hook(z, hook, tgt=tgt):
            z = z.clone()
            z[:, :, head] = z[:, :, head] + eps * (tgt - z[:, :, head])
            return z

        with torch.no_grad():
            logits = model.run_with_hooks(
                b.clean, attention_mask=b.mask, fwd_hooks=[(hook_z(layer), hook)]
            )
        total += float(answer_logprob(logits[:, -1], b).sum())
        n += len(b)
    return total / n


@pytest.mark.parametrize("kind", ["zero", "mean"])
def test_equals_directional_derivative(tiny, kind):
    batches = make_batches(tiny, TASK, batch_size=2, corrupted=False, fmt="plain")
    ours = ablation_atp_scores(tiny, batches, kind)
    means = head_means(tiny, render(tiny, PROMPTS, fmt="plain"))
    eps = 1e-3
    for layer, head in [(0, 0), (1, 2), (2, 3)]:
        if kind == "zero":
            target = lambda b: torch.zeros(1)  # noqa: E731
        else:
            target = lambda b, layer=layer, head=head: means[layer][head]  # noqa: E731
        up = _logprob_along(tiny, batches, layer, head, target, eps)
        down = _logprob_along(tiny, batches, layer, head, target, -eps)
        drop = -(up - down) / (2 * eps)  # minus the derivative towards the ablation value
        assert abs(drop - float(ours[layer, head])) < 2e-3 * max(1.0, abs(drop))


def test_zero_kind_is_gradxact(tiny):
    batches = make_batches(tiny, TASK, batch_size=3, corrupted=False, fmt="plain")
    assert torch.allclose(
        ablation_atp_scores(tiny, batches, "zero"), gradxact_scores(tiny, batches), atol=1e-6
    )


def test_resample_uses_other_examples(tiny):
    batches = make_batches(tiny, TASK, batch_size=3, corrupted=False, fmt="plain")
    a = ablation_atp_scores(tiny, batches, "resample", seed=0)
    assert torch.isfinite(a).all() and not torch.allclose(
        a, ablation_atp_scores(tiny, batches, "mean")
    )
    for n in (2, 3, 7):
        perm = derangement(n, seed=n)
        assert sorted(perm.tolist()) == list(range(n)) and bool((perm != torch.arange(n)).all())


def test_agrees_with_exact_mean_ablation(tiny):
    """First-order estimate vs the exact drop: same sign on the heads that matter most."""
    batches = make_batches(tiny, TASK, batch_size=3, corrupted=False, fmt="plain")
    est = ablation_atp_scores(tiny, batches, "mean")
    exact, metric = mean_ablation_scores(tiny, batches, objective="logprob")
    assert "log-prob" in metric
    corr = torch.corrcoef(torch.stack([est.flatten(), exact.flatten()]))[0, 1]
    assert corr > 0.7


def test_default_method_and_signed_ranking(tiny):
    s = attribute_heads(tiny, TASK, fmt="plain")
    assert s.method == "ablation_atp" and s.rank_by == "signed"
    assert s.top(1)[0] == divmod(
        int(s.scores.flatten().argmax()), 4
    )  # biggest estimated drop first
    assert s.provenance["ablation"] == "mean"


def test_refine_confirms_with_exact_mean_ablation(tiny):
    s = attribute_heads(tiny, TASK, "ablation_atp", refine=3, fmt="plain")
    exact, _ = mean_ablation_scores(
        tiny,
        make_batches(tiny, TASK, batch_size=8, corrupted=False, fmt="plain"),
        objective="logprob",
    )
    assert s.method == "ablation_atp+mean_ablation@3" and int(s.refined.sum()) == 3
    for layer, head in s.top(3):
        assert abs(float(s.scores[layer, head] - exact[layer, head])) < 1e-4
    with pytest.raises(ValueError, match="ablation='mean'"):
        attribute_heads(tiny, TASK, "ablation_atp", refine=3, ablation="zero")


def test_first_layer_scored_by_exact_mean_ablation(tiny):
    """Default ``exact_layers=1``: layer 0 holds the exact drop, computed here by plain hooks."""
    s = attribute_heads(tiny, TASK, "ablation_atp", fmt="plain", rivals=0)
    pure = attribute_heads(tiny, TASK, "ablation_atp", fmt="plain", exact_layers=0, rivals=0)
    batches = make_batches(tiny, TASK, batch_size=8, corrupted=False, fmt="plain")
    means = head_means(tiny, render(tiny, PROMPTS, fmt="plain"))
    assert s.provenance["exact_layers"] == 1 and pure.provenance["exact_layers"] == 0
    for head in range(tiny.cfg.n_heads):
        target = lambda b, head=head: means[0][head]  # noqa: E731
        drop = _logprob_along(tiny, batches, 0, head, target, 0.0) - _logprob_along(
            tiny, batches, 0, head, target, 1.0
        )
        assert abs(float(s.scores[0, head]) - drop) < 1e-4
    assert not torch.allclose(s.scores[0], pure.scores[0])
    assert torch.allclose(s.scores[1:], pure.scores[1:])
    assert torch.allclose(pure.scores, ablation_atp_scores(tiny, batches, "mean"), atol=1e-6)
    assert (
        attribute_heads(tiny, TASK, "ablation_atp", fmt="plain", ablation="zero").provenance[
            "exact_layers"
        ]
        == 0
    )
    with pytest.raises(ValueError, match="exact_layers"):
        attribute_heads(tiny, TASK, "ablation_atp", ablation="zero", exact_layers=1)
    with pytest.raises(ValueError, match="exact_layers"):
        attribute_heads(tiny, TASK, "gradxact", exact_layers=1)
    with pytest.raises(ValueError, match="exact_layers must be"):
        attribute_heads(tiny, TASK, "ablation_atp", exact_layers=tiny.cfg.n_layers + 1)


def test_one_rival_by_default_with_mean_ablation(tiny):
    """The default is the rivals = 1 estimate beyond the exact layer 0; other kinds: first order."""
    from interp_heads.attribution.softmax_atp import ablation_softmax_scores

    s = attribute_heads(tiny, TASK, "ablation_atp", fmt="plain")
    batches = make_batches(tiny, TASK, batch_size=8, corrupted=False, fmt="plain")
    one = ablation_softmax_scores(tiny, batches, "mean", rivals=1)
    assert s.provenance["rivals"] == 1 and "1 rivals" in s.target
    assert torch.allclose(s.scores[1:], one[1:], atol=1e-6)
    assert not torch.allclose(s.scores[1:], ablation_atp_scores(tiny, batches, "mean")[1:])
    zero = attribute_heads(tiny, TASK, "ablation_atp", fmt="plain", ablation="zero")
    assert "rivals" not in zero.provenance
    assert torch.allclose(zero.scores, gradxact_scores(tiny, batches), atol=1e-5)
