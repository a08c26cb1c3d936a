"""The logit metrics (answer_logprob, logit_diff, kl_unmasked) against hand computation with
TransformerLens' own ``run_with_hooks`` on the tiny model: one unpadded example at a time, the
answer's tokens appended by hand, hand-written ``hook_z`` hooks for the mask."""

from __future__ import annotations

import math
import warnings

import pytest
import torch

from interp_heads.errors import InputError
from interp_heads.heads import all_heads
from interp_heads.interventions.means import head_means
from interp_heads.metrics import METRICS, Accuracy, AnswerLogprob, KLUnmasked, LogitDiff
from interp_heads.sweep.checks import SweepWarning
from interp_heads.sweep.loop import SweepConfig, run_sweep
from interp_heads.tasks.schema import Example, Task

RANK = tuple(all_heads(3, 4)[::-1])
WORDS = [("a", "b"), ("bb", "c"), ("cd", "x"), ("eee", "f"), ("f", "g")]


def _task(distractors=True):
    exs = [
        Example(
            id=str(i), task="toy", prompt=f"say {w} ", question=f"say {w}", answer=w,
            distractors=(d,) if distractors else (),
        )
        for i, (w, d) in enumerate(WORDS)
    ]  # fmt: skip
    return Task("toy", exs)


def _hooks(masked, means):
    def make(layer, heads):
        def hook(z, hook):
            z = z.clone()
            for h in heads:
                z[:, :, h] = means[layer][h]
            return z

        return hook

    layers = sorted({layer for layer, _ in masked})
    return [
        (f"blocks.{la}.attn.hook_z", make(la, [h for lb, h in masked if lb == la])) for la in layers
    ]


def _by_hand(model, prompt, answer, distractor, masked, means):
    """Teacher-forced scores of one example, computed with run_with_hooks."""
    lead = "" if prompt[-1].isspace() else " "
    p = model.to_tokens(prompt)[0]
    a = model.to_tokens(lead + answer, prepend_bos=False)[0]
    d = int(model.to_tokens(lead + distractor, prepend_bos=False)[0, 0])
    full = torch.cat([p, a])[None]
    with torch.inference_mode():
        logits = model.run_with_hooks(full, fwd_hooks=_hooks(masked, means))[0]
        clean = model(full)[0]
    last = len(p) - 1
    lp = torch.log_softmax(logits, -1)
    logprob = sum(float(lp[last + i, t]) for i, t in enumerate(a))
    diff = float(logits[last, a[0]] - logits[last, d])
    pu = torch.softmax(clean[last], -1)
    kl = float((pu * (torch.log(pu) - lp[last])).sum())
    return {"answer_logprob": logprob, "logit_diff": diff, "kl_unmasked": kl}


def test_registered_and_refuse_answer_scoring():
    for name in ("answer_logprob", "logit_diff", "kl_unmasked"):
        assert METRICS.get(name)().per_condition
    with pytest.raises(TypeError, match="logits"):
        AnswerLogprob().score([])


def test_sweep_logit_metrics_equal_hand_computation(tiny):
    cfg = SweepConfig(ks=[3], seeds=1, max_new_tokens=3, selections=["topk", "all_but_topk"])
    metrics = [Accuracy(), AnswerLogprob(), LogitDiff(), KLUnmasked()]
    with pytest.warns(SweepWarning):
        res = run_sweep(tiny, {"toy": _task()}, {"toy": RANK}, cfg, metrics, batch_size=2,
                        progress=False)  # fmt: skip
    prompts = res.prompts["toy"]
    means = head_means(tiny, list(prompts.values()))
    rec = res.records.set_index(["selection", "k", "metric", "example_id"])["value"].sort_index()
    conditions = [
        ("baseline", 0, []),
        ("TopK", 3, list(RANK[:3])),
        ("AllButTopK", 3, list(RANK[3:])),
    ]
    for sel, k, masked in conditions:
        for i, (w, d) in enumerate(WORDS):
            want = _by_hand(tiny, prompts[str(i)], w, d, masked, means)
            for name, value in want.items():
                got = rec.loc[sel, k, name, str(i)]
                assert got == pytest.approx(value, abs=2e-4), (sel, name, i)
    base = res.records.query("selection == 'baseline' and metric == 'kl_unmasked'")
    assert (base.value == 0).all()  # the unmasked model's own distribution: exactly 0
    masked = res.records.query("selection == 'TopK' and metric == 'kl_unmasked'")
    assert (masked.value > 0).all()


def test_logit_diff_says_when_a_task_has_no_distractor(tiny):
    cfg = SweepConfig(ks=[2], seeds=1, max_new_tokens=2, selections=["topk"])
    with pytest.raises(InputError, match="no distractor for 5 of 5"):
        run_sweep(tiny, {"toy": _task(False)}, {"toy": RANK}, cfg, [LogitDiff()], progress=False)
    with pytest.raises(InputError, match="positions = 'all'"):
        run_sweep(tiny, {"toy": _task()}, {"toy": RANK}, SweepConfig(ks=[2], positions="last"),
                  [AnswerLogprob()], progress=False)  # fmt: skip


def test_answer_logprob_is_finite_and_negative(tiny):
    cfg = SweepConfig(ks=[2], seeds=1, max_new_tokens=2, selections=["topk"])
    res = run_sweep(tiny, {"toy": _task(False)}, {"toy": RANK}, cfg, [AnswerLogprob()],
                    progress=False)  # fmt: skip
    assert len(res.records) == 2 * 5 and all(math.isfinite(v) and v < 0 for v in res.records.value)


def _position_hooks(masked, means, last):
    """Hand-written position_mean hooks for one unpadded teacher-forced example: position p of
    the prompt takes the mean of the position ``last - p`` from the prompt's end, every answer
    position the last prompt token's (row 0), as a generated token's pass does."""

    def make(layer, heads):
        def hook(z, hook):
            z = z.clone()
            for p in range(z.shape[1]):
                row = min(max(last - p, 0), len(means[layer]) - 1)
                for h in heads:
                    z[:, p, h] = means[layer][row, h]
            return z

        return hook

    layers = sorted({layer for layer, _ in masked})
    return [
        (f"blocks.{la}.attn.hook_z", make(la, [h for lb, h in masked if lb == la])) for la in layers
    ]


def test_position_mean_logit_metrics_align_to_the_prompts_end(tiny):
    """The teacher-forced pass appends the answer: position-wise means must still count back from
    the prompt's last token (not the pass's end), by hand with run_with_hooks."""
    from interp_heads.interventions.means import position_means

    cfg = SweepConfig(ks=[3], seeds=1, max_new_tokens=3, selections=["all_but_topk"],
                      ablation="position_mean")  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a random model's low baseline
        res = run_sweep(tiny, {"toy": _task()}, {"toy": RANK}, cfg, [AnswerLogprob()],
                        batch_size=2, progress=False)  # fmt: skip
    prompts = res.prompts["toy"]
    means = position_means(tiny, list(prompts.values()))
    rec = res.records.set_index(["selection", "k", "example_id"])["value"]
    for i, (w, _) in enumerate(WORDS):
        lead = "" if prompts[str(i)][-1].isspace() else " "
        p = tiny.to_tokens(prompts[str(i)])[0]
        a = tiny.to_tokens(lead + w, prepend_bos=False)[0]
        with torch.inference_mode():
            hooks = _position_hooks(list(RANK[3:]), means, len(p) - 1)
            logits = tiny.run_with_hooks(torch.cat([p, a])[None], fwd_hooks=hooks)[0]
        lp = torch.log_softmax(logits, -1)
        want = sum(float(lp[len(p) - 1 + j, t]) for j, t in enumerate(a))
        assert rec.loc["AllButTopK", 3, str(i)] == pytest.approx(want, abs=2e-4), i
