"""The search for a small sufficient head set: on the planted model it returns exactly the planted
head; on a random-weight model the old greedy search (patience 0, no 1-minimality pass) keeps at
least half the heads while the patient one finds fewer under some kinds; every accepted step
keeps f >= the target (checked again with the sweep's own mask, resample's draws included), and
steps back off to fewer heads before stopping. The brute-force checks of 1-minimality and the
true minimum are in test_search_minimal.py."""

from __future__ import annotations

import math
import warnings

import pytest
import torch

from interp_heads.analysis.head_search import search_heads
from interp_heads.analysis.sufficient_set import find_sufficient_set
from interp_heads.attribution.inputs import answer_logprob, final_logits, make_batches
from interp_heads.errors import InputError
from interp_heads.heads import all_heads, head_label
from interp_heads.tasks.schema import Example, Task


def _successor_task(model, repeat: int = 1) -> Task:
    """Digit -> its successor; each example's corrupted prompt is the next example's digit."""
    from interp_heads.analysis.known_heads import ordinal_token_ids

    tok = model.tokenizer
    digits = [tok.decode([i]) for i in ordinal_token_ids(model)["digits"]]
    pairs = list(zip(digits[:-1], digits[1:], strict=True)) * repeat
    other = pairs[1:] + pairs[:1]
    # a trailing space: the byte tokenizer then puts the answer digit first (not a space)
    return Task("succ", [Example(f"d{i}", "succ", a + " ", b, question=a,
                                 corrupted_prompt=c + " ", corrupted_answer=d)
                         for i, ((a, b), (c, d)) in enumerate(zip(pairs, other, strict=True))])  # fmt: skip


def _toy() -> Task:
    words = ["ab", "cd", "ef", "gh", "ij", "kl", "mn", "op"]
    other = words[1:] + words[:1]
    return Task("toy", [Example(str(i), "toy", f"say {w} ", w, question=f"say {w}",
                                corrupted_prompt=f"say {c} ", corrupted_answer=c)
                        for i, (w, c) in enumerate(zip(words, other, strict=True))])  # fmt: skip


def _patched_logprob(model, batches, heads) -> float:
    """m with ``heads`` patched from each example's corrupted prompt, by hand: the corrupted
    run's ``hook_z`` cached, then written into the clean run at those heads and every position."""
    total, n = 0.0, 0
    with torch.no_grad():
        for b in batches:
            _, cache = model.run_with_cache(b.corrupted, attention_mask=b.mask)

            def patch(z, hook, cache=cache):
                hs = [h for layer, h in heads if layer == hook.layer()]
                return torch.stack([cache[hook.name][:, :, i] if i in hs else z[:, :, i]
                                    for i in range(z.shape[2])], dim=2)  # fmt: skip

            with model.hooks(fwd_hooks=[(lambda name: name.endswith("hook_z"), patch)]):
                resid = model(b.clean, attention_mask=b.mask, stop_at_layer=model.cfg.n_layers)
            total += float(answer_logprob(final_logits(model, resid), b).sum())
            n += len(b)
    return total / n


def _f_by_hand_patching(model, task, kept) -> float:
    batches = make_batches(model, task, corrupted=True)
    heads = all_heads(model.cfg.n_layers, model.cfg.n_heads)
    dropped = [h for h in heads if h not in kept]
    m_kept, m_none, m_all = (_patched_logprob(model, batches, d) for d in (dropped, heads, []))
    return (m_kept - m_none) / (m_all - m_none)


def _masked_logprob(model, batches, heads, prompts, kind="mean") -> float:
    """m with ``heads`` ablated by the sweep's mask (``mask_heads``), means over ``prompts``."""
    from interp_heads.interventions.kinds import get_kind
    from interp_heads.interventions.masks import mask_heads

    values, total, n = get_kind(kind).values(model, prompts), 0.0, 0
    with torch.no_grad(), mask_heads(model, heads, kind, values=values, warn_if_idle=False):
        for b in batches:
            resid = model(b.clean, attention_mask=b.mask, stop_at_layer=model.cfg.n_layers)
            total += float(answer_logprob(final_logits(model, resid), b).sum())
            n += len(b)
    return total / n


def _f_by_the_sweeps_mask(model, task, path, kind="mean") -> float:
    batches = make_batches(model, task, corrupted=False)
    prompts = [e.prompt for e in task.examples]
    heads = all_heads(model.cfg.n_layers, model.cfg.n_heads)
    dropped = [h for h in heads if h not in path.heads]
    m_kept, m_none = (_masked_logprob(model, batches, d, prompts, kind) for d in (dropped, heads))
    m_all = _masked_logprob(model, batches, [], prompts, kind)
    return (m_kept - m_none) / (m_all - m_none)


@pytest.mark.parametrize("kind", ["mean", "position_mean", "resample"])
def test_planted_model_search_returns_exactly_the_planted_head(kind):
    from interp_heads.testing.planted import PLANTED, planted_model

    model = planted_model()
    task = _successor_task(model)
    path = search_heads(model, make_batches(model, task, corrupted=False), ablation=kind)
    assert path.heads == [PLANTED["successor"]]
    assert path.f >= 0.9 and path.n_total == 8
    assert path.size_interval(n_boot=200) == (1, 1)  # no resample keeps f without the head
    assert _f_by_the_sweeps_mask(model, task, path, kind) == pytest.approx(path.f, abs=1e-4)


def test_counterfactual_search_returns_the_planted_head_and_hand_patching_agrees():
    from interp_heads.testing.planted import PLANTED, planted_model

    model = planted_model()
    task = _successor_task(model)
    batches = make_batches(model, task, corrupted=True)
    path = search_heads(model, batches, ablation="counterfactual")
    assert path.heads == [PLANTED["successor"]] and path.f >= 0.9
    assert _f_by_hand_patching(model, task, path.heads) == pytest.approx(path.f, abs=1e-4)
    with pytest.raises(InputError, match="corrupted prompt"):
        search_heads(model, make_batches(model, task, corrupted=False), ablation="counterfactual")


def test_found_set_is_verified_on_held_out_examples_beside_prefix_and_random():
    from interp_heads.testing.planted import PLANTED, planted_model

    model = planted_model()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # random draws that equal the found set
        res = find_sufficient_set(model, _successor_task(model, repeat=2), method="mean_ablation",
                                  max_new_tokens=1, n_boot=50)  # fmt: skip
    assert res.heads == [PLANTED["successor"]] and res.size == 1
    assert res.n_search == 9 and res.n_held_out == 9
    t = res.table().set_index(["set", "metric"])
    assert t.loc[("found", "accuracy"), "mean"] == 1.0 and t.loc[("found", "accuracy"), "f"] == 1.0
    assert t.loc[("found", "answer_logprob"), "f"] >= 0.9
    assert t.loc[("ranking prefix", "accuracy"), "f"] == 1.0  # exact mean ablation ranks it first
    assert (
        t.loc[("random", "accuracy"), "f"] < 0.9 and t.loc[("random", "accuracy"), "n_draws"] == 3
    )
    assert "L1H2" in repr(res)


def test_counterfactual_set_is_verified_on_held_out_log_prob_by_hand_patching():
    from interp_heads.testing.planted import PLANTED, planted_model

    model = planted_model()
    task = _successor_task(model, repeat=2)
    res = find_sufficient_set(model, task, method="mean_ablation", ablation="counterfactual",
                              n_boot=50)  # fmt: skip
    assert res.heads == [PLANTED["successor"]]
    t = res.table().set_index("set")
    assert set(t.metric) == {"answer_logprob"} and t.loc["random", "n_draws"] == 3
    held = Task(task.name, task.examples[res.n_search :])
    by_hand = _f_by_hand_patching(model, held, res.heads)
    assert t.loc["found", "f"] == pytest.approx(by_hand, abs=1e-4)
    assert t.loc["ranking prefix", "f"] == pytest.approx(by_hand, abs=1e-4)  # ranked first
    assert t.loc["random", "f"] < 0.9
    # where every head matters a little (random weights, a looser target), f is not trivially 1
    from interp_heads.testing.tiny import tiny_model

    model, task = tiny_model(), _toy()
    res = find_sufficient_set(model, task, method="gradxact", ablation="counterfactual",
                              target=0.5, n_boot=50)  # fmt: skip
    held = Task(task.name, task.examples[res.n_search :])
    f = res.table().set_index("set").loc["found", "f"]
    assert f != pytest.approx(1.0) and f == pytest.approx(
        _f_by_hand_patching(model, held, res.heads), abs=1e-4
    )


OLD = dict(patience=0, minimal=False, upper=None)  # the search before patience and the pass


def test_random_weight_model_old_greedy_keeps_half_the_patient_search_fewer():
    from interp_heads.testing.tiny import tiny_model

    model = tiny_model()
    task = _toy()
    n_total = model.cfg.n_layers * model.cfg.n_heads
    sizes = {}
    for kind in ("mean", "position_mean", "resample"):
        batches = make_batches(model, task, corrupted=False)
        old = search_heads(model, batches, ablation=kind, **OLD)
        # the old search stopped at the first single head that failed: pooled means and
        # resampled prompts' means kept all 12, position-wise means 6
        assert len(old.heads) >= n_total // 2, kind
        path = search_heads(model, batches, ablation=kind)
        sizes[kind] = len(path.heads)
        assert path.one_minimal and 0.9 <= path.f <= 1.1 and len(path.heads) <= len(old.heads)
        assert _f_by_the_sweeps_mask(model, task, path, kind) == pytest.approx(path.f, abs=1e-4)
    # "no set of fewer than half the heads" was the old search's stop, not the model's: with
    # patience and the pass, resampled means hold f with 5 heads
    assert min(sizes.values()) < n_total // 2, sizes
    # counterfactual (each example's corrupted prompt): at a looser target it drops heads, and f
    # there equals hand-written patching from the corrupted run's cache
    batches = make_batches(model, task, corrupted=True)
    path = search_heads(model, batches, ablation="counterfactual", **OLD)
    assert len(path.heads) >= n_total // 2 and path.f >= 0.9
    path = search_heads(model, batches, ablation="counterfactual", target=0.5)
    assert len(path.heads) < n_total // 2 and 0.5 <= path.f < 0.9 and path.one_minimal
    assert _f_by_hand_patching(model, task, path.heads) == pytest.approx(path.f, abs=1e-4)
    # a looser target does drop heads, and f there is the sweep's f too
    path = search_heads(model, make_batches(model, task, corrupted=False), target=0.5,
                        ablation="position_mean")  # fmt: skip
    assert len(path.heads) < n_total and path.f >= 0.5
    assert _f_by_the_sweeps_mask(model, task, path, "position_mean") == pytest.approx(
        path.f, abs=1e-4
    )


@pytest.mark.parametrize("target", [0.9, 0.5])
def test_each_step_keeps_f_above_target_and_backs_off_before_stopping(target):
    from interp_heads.testing.tiny import tiny_model

    model = tiny_model()
    step = 0.4  # 5 of 12 heads first: a back-off halves it (5, 2, 1)
    path = search_heads(model, make_batches(model, _toy(), corrupted=False), target=target,
                        step=step, **OLD)  # fmt: skip
    steps = path.steps()
    kept = model.cfg.n_layers * model.cfg.n_heads
    for _, group in steps.groupby((steps.kept_before.diff() != 0).cumsum()):
        tried = list(group.tried)
        assert group.kept_before.iloc[0] == kept  # a step starts where the last one ended
        assert tried[0] == math.ceil(step * kept)
        assert all(b == max(1, a // 2) for a, b in zip(tried, tried[1:], strict=False))
        assert not group.accepted.iloc[:-1].any()  # backed off only after a failed trial
        if group.accepted.iloc[-1]:
            assert group.f.iloc[-1] >= target
            kept -= tried[-1]
        else:
            assert tried[-1] == 1 and group.f.iloc[-1] < target  # stop: one head crosses
    assert not steps.accepted.iloc[-1] and len(path.heads) == kept
    accepted = steps[steps.accepted]
    assert (accepted.f >= target).all()
    assert path.f == (accepted.f.iloc[-1] if len(accepted) else 1.0)


def test_target_and_step_outside_zero_one_are_refused():
    from interp_heads.testing.tiny import tiny_model

    model = tiny_model()
    batches = make_batches(model, _toy(), corrupted=False)
    for bad in (dict(target=0.0), dict(step=1.5)):
        with pytest.raises(InputError, match="in \\(0, 1\\]"):
            search_heads(model, batches, **bad)
    with pytest.raises(InputError, match="ablates with one of"):
        search_heads(model, batches, ablation="zero")
    with pytest.raises(InputError, match="n_search"):
        find_sufficient_set(model, _toy(), n_search=8)


def test_size_interval_is_the_smallest_tried_set_keeping_the_target_per_resample():
    import numpy as np

    from interp_heads.analysis.head_search import SearchPath

    # two examples: the 3-head trial keeps example 0 fully and example 1 not at all (f 0.5 on
    # both, rejected); resamples {0, 0} (a quarter of them) accept it, the others stop at 5
    trials = [{"kept_before": 8, "tried": 3, "f": 0.95, "accepted": True},
              {"kept_before": 5, "tried": 2, "f": 0.5, "accepted": False}]  # fmt: skip
    examples = {"all": np.array([1.0, 1.0]), "none": np.array([0.0, 0.0]),
                "trials": np.array([[0.95, 0.95], [1.0, 0.0]])}  # fmt: skip
    path = SearchPath([], 0.95, 1.0, 0.0, 8, trials, 0.9, examples)
    assert path.size_interval(n_boot=4000) == (3, 5)
    assert path.size_interval(n_boot=4000, level=0.4) == (5, 5)  # 30th..70th percentile


def test_patience_keeps_a_head_whose_removal_fails_and_goes_on(monkeypatch):
    """With the estimate's order wrong (the planted head called cheapest), the search without
    patience stops at every head; with one head of patience it keeps that head and goes on to
    exactly the planted head."""
    from interp_heads.testing.planted import PLANTED, planted_model
    from tests.helpers import planted_head_first

    model = planted_model()
    batches = make_batches(model, _successor_task(model), corrupted=False)
    layer, head = PLANTED["successor"]
    planted_head_first(monkeypatch, model)
    stuck = search_heads(model, batches, **OLD)
    assert len(stuck.heads) == stuck.n_total and stuck.f == 1.0  # stopped at the first trial
    assert list(stuck.steps().removed) == [head_label(layer, head)]
    path = search_heads(model, batches, patience=1, minimal=False)
    assert path.heads == [PLANTED["successor"]] and path.f >= 0.9
    with pytest.raises(InputError, match="patience"):
        search_heads(model, batches, patience=-1)


def test_the_search_cuts_its_gradient_batches_to_the_free_memory(monkeypatch):
    """Batches cut to two examples (the free memory, patched) find the same set, f within 1e-5."""
    from interp_heads.attribution import memory as mem
    from interp_heads.testing.planted import planted_model

    model = planted_model()
    task = _successor_task(model, repeat=2)
    kw = dict(method="mean_ablation", ablation="counterfactual", n_boot=50)
    whole = find_sufficient_set(model, task, **kw)
    width = max(b.clean.shape[1] for b in make_batches(model, task, corrupted=False))
    two = int(2 * mem.row_bytes(model.cfg, width) / mem.FRACTION) + 1
    monkeypatch.setattr(mem, "free_bytes", lambda device: two)
    with pytest.warns(UserWarning, match=r"gradient batches of \d+ to 2 examples, not 16"):
        cut = find_sufficient_set(model, task, **kw)
    assert cut.heads == whole.heads
    assert cut.path.f == pytest.approx(whole.path.f, abs=1e-5)


@pytest.mark.parametrize("free", [0, 2**50])
def test_a_rejected_trial_takes_no_backward_pass_and_every_trial_is_the_sweeps_f(monkeypatch, free):
    """Each trial is forward passes only; the backward passes (the next step's ranking) are
    taken once for the start and once per accepted trial, batch by batch. Holding every batch's
    graph (much free memory) or only the last one's (none: the others run again when accepted)
    gives the same trials, and every trial's f, rejected ones included, is f by the sweep's own
    mask on the set it tried."""
    from interp_heads.analysis import kept_model
    from interp_heads.attribution import memory
    from interp_heads.attribution.gradients import ZPass
    from interp_heads.heads import parse_head
    from interp_heads.testing.tiny import tiny_model

    model, task = tiny_model(), _toy()
    batches = make_batches(model, task, batch_size=3, corrupted=False)
    assert len(batches) == 3
    monkeypatch.setattr(memory, "free_bytes", lambda device: free)
    calls = {"backward": 0, "forward": 0, "graph": 0}
    gradients, forward = ZPass.gradients, kept_model.z_forward

    def counted_gradients(self):
        calls["backward"] += 1
        return gradients(self)

    def counted_forward(*args, graph=True, **kw):
        calls["forward"] += 1
        calls["graph"] += graph
        return forward(*args, graph=graph, **kw)

    monkeypatch.setattr(ZPass, "gradients", counted_gradients)
    monkeypatch.setattr(kept_model, "z_forward", counted_forward)
    path = search_heads(model, batches, ablation="mean")
    steps = path.steps()
    accepted, rejected = int(steps.accepted.sum()), int((~steps.accepted).sum())
    assert accepted and rejected
    assert calls["backward"] == (1 + accepted) * len(batches)
    # forward: the values (one pass a batch), the two ends and each trial; run again without
    # the graph only where the memory held none
    n_passes = (3 + len(steps)) * len(batches)
    again = 0 if free else (1 + accepted) * (len(batches) - 1)
    assert calls["forward"] == n_passes + again
    # every trial's f by the sweep's mask on the set it tried
    prompts = [e.prompt for e in task.examples]
    every = all_heads(model.cfg.n_layers, model.cfg.n_heads)
    m_all, m_none = (_masked_logprob(model, batches, h, prompts) for h in ([], every))
    removed, prune = set(), False
    for t in path.trials:
        if t["phase"] == "prune" and not prune:  # the pass starts from the set the search kept
            prune, removed = True, set(every) - set(path.heads) - set(path.pruned)
        tried = removed | {parse_head(s) for s in t["removed"].split(",")}
        m = _masked_logprob(model, batches, sorted(tried), prompts)
        assert (m - m_none) / (m_all - m_none) == pytest.approx(t["f"], abs=1e-4)
        if t["accepted"]:
            removed = tried


@pytest.mark.parametrize("kind", ["mean", "position_mean", "counterfactual"])
def test_an_example_run_once_with_weight_c_is_the_search_over_c_copies(kind):
    """A bootstrap resample's repeated examples run once each, counted by ``Batch.weight``: the
    search takes the same trials (removed heads, accepted or not) with f equal to 1e-5 as the
    search over the rows written out c times, and keeps the same heads."""
    import dataclasses

    from interp_heads.testing.tiny import tiny_model

    model, task = tiny_model(), _toy()
    times = [3, 1, 2, 1, 1, 4, 1, 2]  # example i counted times[i] times
    copies = Task("toy", [dataclasses.replace(e, id=f"{e.id}.{j}")
                          for e, c in zip(task.examples, times, strict=True)
                          for j in range(c)])  # fmt: skip
    corrupted = kind == "counterfactual"
    written_out = search_heads(model, make_batches(model, copies, corrupted=corrupted),
                               ablation=kind, target=0.5)  # fmt: skip
    count = {e.id: c for e, c in zip(task.examples, times, strict=True)}
    weighted = [dataclasses.replace(b, weight=torch.tensor([count[i] for i in b.ids]))
                for b in make_batches(model, task, batch_size=3, corrupted=corrupted)]  # fmt: skip
    once = search_heads(model, weighted, ablation=kind, target=0.5)
    assert len(written_out.trials) > 3
    assert once.heads == written_out.heads
    for a, b in zip(once.trials, written_out.trials, strict=True):
        assert (a["removed"], a["accepted"]) == (b["removed"], b["accepted"])
        assert a["f"] == pytest.approx(b["f"], abs=1e-5)
    assert once.m_all == pytest.approx(written_out.m_all, abs=1e-5)
    assert sorted(once.examples["all"]) == pytest.approx(sorted(written_out.examples["all"]))


def test_resample_values_hold_an_example_counted_c_times_c_times():
    """``resample`` draws a prompt per removed head: with weights, each prompt's row is there as
    many times as it counts, so the draws fall on the same prompts with the same probabilities
    as over the rows written out (in another order)."""
    import dataclasses

    from interp_heads.analysis.kept_model import KeptModel
    from interp_heads.testing.tiny import tiny_model

    model, task = tiny_model(), _toy()
    times = [3, 1, 2, 1, 1, 4, 1, 2]
    copies = Task("toy", [dataclasses.replace(e, id=f"{e.id}.{j}")
                          for e, c in zip(task.examples, times, strict=True)
                          for j in range(c)])  # fmt: skip
    count = {e.id: c for e, c in zip(task.examples, times, strict=True)}
    weighted = [dataclasses.replace(b, weight=torch.tensor([count[i] for i in b.ids]))
                for b in make_batches(model, task, batch_size=3, corrupted=False)]  # fmt: skip

    def rows(batches):
        values = KeptModel(model, batches, "resample").values
        return sorted(tuple(round(float(v), 5) for v in row[0].flatten()[:4]) for row in values)

    assert rows(weighted) == rows(make_batches(model, copies, corrupted=False))
    assert len(rows(weighted)) == sum(times)
