"""Attribution methods on the tiny GQA model: exact == TransformerLens, identities, hygiene."""

from __future__ import annotations

import pytest
import torch

from interp_heads.attribution import (
    METHODS,
    answer_token,
    atp_scores,
    attribute_heads,
    exact_scores,
    gradxact_scores,
    headmask_scores,
    make_batches,
    mean_ablation_scores,
    patch_heads,
    z_gradients,
)
from interp_heads.attribution.inputs import answer_logprob, logit_diff
from interp_heads.errors import InputError
from interp_heads.heads import hook_z
from interp_heads.models.tl_compat import HAS_HOOKED
from interp_heads.tasks.schema import Example, Task
from interp_heads.testing.tiny import PATCHING_EXAMPLES, tl_head_patching


@pytest.fixture
def task():
    return Task("t", list(PATCHING_EXAMPLES))


def no_hooks(model) -> bool:
    return all(not hp.fwd_hooks and not hp.bwd_hooks for hp in model.hook_dict.values())


@pytest.mark.parametrize("ids", [["fr"], ["cat"]])
def test_exact_equals_transformer_lens(tiny, task, ids):
    sub = task.subset(ids=ids)
    ref = tl_head_patching(tiny, sub)
    ours = exact_scores(tiny, make_batches(tiny, sub))
    assert ours.shape == (3, 4)
    assert torch.allclose(ours, ref, atol=1e-4), (ours - ref).abs().max()
    assert no_hooks(tiny)


def test_exact_equals_transformer_lens_without_prefix_skip(tiny, task):
    sub = task.subset(ids=["fr"])
    (b,) = make_batches(tiny, sub)
    ref = tl_head_patching(tiny, sub)
    z = {i: tiny.run_with_cache(b.clean)[1][hook_z(i)] for i in range(3)}
    with torch.no_grad():
        ld = [float(logit_diff(tiny(t)[:, -1], b).mean()) for t in (b.clean, b.corrupted)]
    for start in (0, b.first_diff):
        res = patch_heads(
            tiny, b.corrupted, z.__getitem__, lambda lg: logit_diff(lg, b), start_pos=start
        )
        ours = (res.mean(-1) - ld[1]) / (ld[0] - ld[1])
        assert torch.allclose(ours, ref, atol=1e-4)


def test_padding_and_batching_do_not_change_scores(tiny, task):
    padded = make_batches(tiny, task, batch_size=3)
    assert not bool(padded[0].mask.all())
    single = make_batches(tiny, task, batch_size=1)
    fns = [
        exact_scores,
        atp_scores,
        gradxact_scores,
        headmask_scores,
        lambda m, b: mean_ablation_scores(m, b)[0],
    ]
    for fn in fns:
        assert torch.allclose(fn(tiny, padded), fn(tiny, single), atol=1e-4)


def test_patch_heads_subset_and_max_rows(tiny, task):
    (b,) = make_batches(tiny, task.subset(ids=["fr"]))
    z = tiny.run_with_cache(b.clean)[1]
    full = patch_heads(
        tiny, b.corrupted, lambda i: z[hook_z(i)], lambda lg: logit_diff(lg, b), max_rows=1
    )
    sub = patch_heads(
        tiny,
        b.corrupted,
        lambda i: z[hook_z(i)],
        lambda lg: logit_diff(lg, b),
        heads=[(1, 2), (2, 0)],
    )
    assert torch.allclose(sub[1, 2], full[1, 2], atol=1e-5) and torch.allclose(
        sub[2, 0], full[2, 0], atol=1e-5
    )
    assert int(torch.isnan(sub).sum()) == 3 * 4 - 2


def test_headmask_equals_analytic_identity(tiny, task):
    """d/dmask at mask=1 == sum over pos, d_head of grad_z * z, per example; |.| averaged."""
    batches = make_batches(tiny, task, batch_size=3)
    ours = headmask_scores(tiny, batches)
    expected = torch.zeros(3, 4)
    for ex in task:
        (b,) = make_batches(tiny, Task("t", [ex]), corrupted=False)
        store = {}

        def keep(z, hook, store=store):
            z = z.clone()  # the hook's output is the tensor the forward goes on with (bridge too)
            z.retain_grad()
            store[hook.layer()] = z
            return z

        tiny.zero_grad()
        logits = tiny.run_with_hooks(b.clean, fwd_hooks=[(lambda n: n.endswith("hook_z"), keep)])
        loss = -answer_logprob(logits[:, -1], b).sum()
        loss.backward()
        for layer, z in store.items():
            expected[layer] += (z.grad * z).sum(dim=(0, 1, 3)).detach().abs()
    tiny.zero_grad()
    assert torch.allclose(ours, expected / len(task), atol=1e-5)


def test_gradxact_equals_grad_times_activation(tiny, task):
    (b,) = make_batches(tiny, task.subset(ids=["cat"]), corrupted=False)
    zs, grads, vals = z_gradients(tiny, b.clean, lambda lg: answer_logprob(lg, b))
    ours = gradxact_scores(tiny, [b])
    for layer in range(3):
        assert torch.allclose(ours[layer], (zs[layer] * grads[layer]).sum(dim=(0, 1, 3)), atol=1e-6)
    assert torch.allclose(vals, answer_logprob(tiny(b.clean)[:, -1], b), atol=1e-5)


def test_atp_equals_the_derivative_of_patching_towards_clean(tiny, task):
    """atp = d/de of the normalised logit difference when one head's corrupted z moves e of the way
    to its clean z: central finite differences through plain hooks, no gradients."""
    (b,) = make_batches(tiny, task.subset(ids=["fr"]))
    ours = atp_scores(tiny, [b])
    with torch.no_grad():
        _, cache = tiny.run_with_cache(b.clean, names_filter=lambda n: n.endswith("hook_z"))
        ld_clean = float(logit_diff(tiny(b.clean)[:, -1], b))
        ld_corr = float(logit_diff(tiny(b.corrupted)[:, -1], b))

    def moved(layer, head, eps):
        def hook(z, hook):
            z = z.clone()
            z[:, :, head] += eps * (cache[hook_z(layer)][:, :, head] - z[:, :, head])
            return z

        with torch.no_grad():
            logits = tiny.run_with_hooks(b.corrupted, fwd_hooks=[(hook_z(layer), hook)])
        return float(logit_diff(logits[:, -1], b))

    eps = 1e-2
    for layer, head in [(0, 0), (1, 2), (2, 3), (2, 1)]:
        d = (moved(layer, head, eps) - moved(layer, head, -eps)) / (2 * eps) / (ld_clean - ld_corr)
        assert abs(d - float(ours[layer, head])) < 2e-3 * max(1.0, abs(d)), (layer, head)


@pytest.mark.skipif(not HAS_HOOKED, reason="a property of the tiny hooked model's weights")
def test_atp_sign_and_scale_match_exact(tiny, task):
    batches = make_batches(tiny, task.subset(ids=["fr"]))
    exact, atp = exact_scores(tiny, batches), atp_scores(tiny, batches)
    corr = torch.corrcoef(torch.stack([exact.flatten(), atp.flatten()]))[0, 1]
    assert corr > 0.8
    big = exact.abs() > 0.2 * exact.abs().max()
    assert bool((exact[big].sign() == atp[big].sign()).all())
    assert 0.3 < float(atp.abs().sum() / exact.abs().sum()) < 3


def test_mean_ablation_matches_direct_hook(tiny, task):
    batches = make_batches(tiny, task, batch_size=3)
    scores, metric = mean_ablation_scores(tiny, batches)
    assert "normalised" in metric
    (b,) = batches
    mean = torch.zeros(3, 4, 16)
    count = 0
    for ex in task:
        (bb,) = make_batches(tiny, Task("t", [ex]), corrupted=False)
        cache = tiny.run_with_cache(bb.clean)[1]
        mean += torch.stack([cache[hook_z(i)][0].sum(0) for i in range(3)])
        count += bb.clean.shape[1]
    mean /= count
    ld_clean = logit_diff(tiny(b.clean, attention_mask=b.mask)[:, -1], b)
    ld_corr = logit_diff(tiny(b.corrupted, attention_mask=b.mask)[:, -1], b)
    for layer, head in [(0, 1), (2, 3)]:

        def ablate(z, hook, head=head, layer=layer):
            z[:, :, head] = mean[layer, head]
            return z

        logits = tiny.run_with_hooks(
            b.clean, attention_mask=b.mask, fwd_hooks=[(hook_z(layer), ablate)]
        )
        drop = (ld_clean - logit_diff(logits[:, -1], b)).mean() / (ld_clean - ld_corr).mean()
        assert abs(float(drop.detach()) - float(scores[layer, head])) < 1e-4


def test_hooks_removed_and_params_restored_on_error(tiny, task):
    (b,) = make_batches(tiny, task.subset(ids=["fr"]))
    z = tiny.run_with_cache(b.clean)[1]

    def boom(_):
        raise RuntimeError("metric failed")

    with pytest.raises(RuntimeError, match="metric failed"):
        patch_heads(tiny, b.corrupted, lambda i: z[hook_z(i)], boom)
    assert no_hooks(tiny)
    tiny.W_U.requires_grad_(True)
    with pytest.raises(RuntimeError, match="metric failed"):
        z_gradients(tiny, b.clean, boom)
    assert no_hooks(tiny)
    assert all(p.requires_grad for p in tiny.parameters())


def test_gradients_freeze_parameters(tiny, task):
    (b,) = make_batches(tiny, task.subset(ids=["fr"]))
    seen = []

    def objective(lg):
        seen.append([p.requires_grad for p in tiny.parameters()])
        return answer_logprob(lg, b)

    z_gradients(tiny, b.clean, objective)
    assert seen and not any(seen[0])
    assert all(p.requires_grad for p in tiny.parameters())
    assert all(p.grad is None for p in tiny.parameters())


def test_attribute_heads_all_methods(tiny, task):
    # retrieval_score: needle tasks only (test_retrieval_score.py); probe: several tasks at once
    for method in (m for m in METHODS if m not in ("retrieval_score", "probe")):
        s = attribute_heads(tiny, task, method, batch_size=2)
        assert (
            s.scores.shape == (3, 4)
            and s.method == (method if method != "auto" else "atp")
            and s.task == "t"
        )
        assert torch.isfinite(s.scores).all() and s.target
        prov = s.provenance
        assert prov["n_examples"] == 3 and sorted(prov["example_ids"]) == ["cat", "fr", "sun"]
        assert {"versions", "seconds", "date", "model"} <= set(prov)
    assert no_hooks(tiny)
    with pytest.raises(InputError, match="several tasks together"):
        attribute_heads(tiny, task, "probe")


def test_refine_ranks_refined_heads_first(tiny, task):
    cheap = attribute_heads(tiny, task, "gradxact")
    exact = attribute_heads(tiny, task, "exact")
    ref = attribute_heads(tiny, task, "gradxact", refine=4)
    assert ref.method == "gradxact+exact@4" and int(ref.refined.sum()) == 4
    top4 = set(cheap.top(4))
    assert set(ref.top(4)) == top4
    for layer, head in top4:
        assert abs(float(ref.scores[layer, head] - exact.scores[layer, head])) < 1e-5
    rest = [h for h in cheap.top(12) if h not in top4]
    assert ref.top(12)[4:] == rest


def test_methods_without_corrupted_prompts(tiny):
    plain = Task("p", [Example("a", "p", "The capital of France is ", "Paris")])
    for method in ("gradxact", "headmask", "mean_ablation"):
        s = attribute_heads(tiny, plain, method)
        assert torch.isfinite(s.scores).all()
    assert "log-prob" in attribute_heads(tiny, plain, "mean_ablation").target
    with pytest.raises(ValueError, match="corrupted"):
        attribute_heads(tiny, plain, "exact")
    with pytest.raises(ValueError, match="unknown attribution method"):
        attribute_heads(tiny, plain, "magic")


def test_length_mismatch_is_reported(tiny):
    bad = Task(
        "b", [Example("x", "b", "abc ", "A", corrupted_prompt="abcd ", corrupted_answer="B")]
    )
    with pytest.raises(ValueError, match="token length"):
        make_batches(tiny, bad)


def test_answer_token_plain_format(tiny):
    space = tiny.to_tokens(" ", prepend_bos=False)[0, 0]
    letter = tiny.to_tokens("P", prepend_bos=False)[0, 0]
    assert answer_token(tiny, "Paris", chat=False, prompt="is") == int(space)
    assert answer_token(tiny, "Paris", chat=False, prompt="is ") == int(letter)
    assert answer_token(tiny, "Paris", chat=True) == int(letter)


def test_progress_shows_each_pass_with_its_total(tiny, task, capsys):
    plain = attribute_heads(tiny, task, "ablation_atp", batch_size=2)
    shown = attribute_heads(tiny, task, "ablation_atp", batch_size=2, progress=True)
    err = capsys.readouterr().err
    assert "attribute_heads pass 1" in err and "2/2" in err and "forward=" in err
    assert torch.equal(plain.scores, shown.scores) and no_hooks(tiny)
