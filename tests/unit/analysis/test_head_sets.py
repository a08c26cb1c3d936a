"""The head-set selections: LowK, AllButTopK (alias ``last``) and AllButRandomK.

Checked against hand-built head lists, hand-written ``hook_z`` hooks on the tiny model, the
unmasked model (a kept set of every head) and the plain executor (packed == plain)."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from interp_heads.generation.decode import tokenize_left_padded
from interp_heads.heads import all_heads
from interp_heads.interventions.masks import mask_heads
from interp_heads.interventions.means import head_means
from interp_heads.interventions.selections import (
    SELECTIONS,
    AllButRandomK,
    AllButTopK,
    LowK,
    RandomK,
    display_names,
    make_selections,
)
from interp_heads.metrics import Accuracy, AnswerLogprob, ChrF, KLUnmasked
from interp_heads.sweep.checks import SweepWarning
from interp_heads.sweep.loop import SweepConfig, plan_conditions, run_sweep
from interp_heads.sweep.stats import significance
from interp_heads.tasks.schema import Example, Task

RANK = tuple(all_heads(3, 4)[::-1])  # L2H3 first ... L0H0 last
N = 12


def test_lowk_takes_the_tail_of_the_ranking():
    assert LowK(RANK).select(3) == [(0, 0), (0, 1), (0, 2)]
    assert LowK(RANK).select(N) == list(reversed(RANK))
    with pytest.raises(ValueError, match="available to LowK"):  # names itself, not TopK
        LowK(RANK).select(N + 1)


def test_all_but_topk_masks_the_complement_of_topk():
    sel = AllButTopK(RANK)
    assert sel.keeps(3) == [(2, 3), (2, 2), (2, 1)]
    assert sel.select(3) == [h for h in RANK if h not in {(2, 3), (2, 2), (2, 1)}]
    assert sel.select(0) == list(RANK) and sel.select(N) == []
    with pytest.raises(ValueError, match="exceeds"):
        sel.select(N + 1)


def test_all_but_randomk_keeps_randomk_draws():
    sel = AllButRandomK(3, 4, salt="t")
    for seed in range(3):
        kept = RandomK(3, 4, salt="t").select(5, seed)
        assert sel.keeps(5, seed) == kept
        assert set(sel.select(5, seed)) == set(all_heads(3, 4)) - set(kept)
    assert set(sel.keeps(2, 1)) <= set(sel.keeps(5, 1))  # nested over k
    assert sel.keeps(5, 0) != sel.keeps(5, 1)
    assert sel.select(0, 0) == all_heads(3, 4) and sel.select(N, 0) == []


def test_names_aliases_and_class_attributes():
    assert SELECTIONS.get("last") is AllButTopK and SELECTIONS.get("LowK") is LowK
    assert SELECTIONS.get("all-but-randomk") is AllButRandomK
    made = make_selections(["lowk", "last", "all_but_randomk"], RANK, 3, 4)
    assert [s.display for s in made] == ["LowK", "AllButTopK", "AllButRandomK"]
    assert display_names(random=True, kept=True) == ["AllButRandomK"]
    assert "AllButTopK" in display_names(random=False, kept=True)
    assert "LowK" in display_names(random=False, kept=False)
    assert LowK.dash == "dot" and AllButTopK.dash not in {"solid", "dash", "dot", "dashdot"}
    from interp_heads.config.sections import SweepSection

    assert SweepSection(selections=["last", "lowk"]).selections == ["all_but_topk", "lowk"]


def test_plan_keeps_k_zero_for_kept_sets_only():
    cfg = SweepConfig(ks=[0, 2], seeds=2, selections=["topk", "all_but_topk", "all_but_randomk"])
    plan = plan_conditions(cfg, RANK, 3, 4, "t")
    names = [(s, k, seed) for s, k, seed, _ in plan]
    assert ("TopK", 0, 0) not in names and ("AllButTopK", 0, 0) in names
    assert ("AllButRandomK", 0, 1) in names and ("TopK", 2, 0) in names
    with pytest.raises(ValueError, match="must be in 1"):
        plan_conditions(SweepConfig(ks=[0]), RANK, 3, 4, "t")


def _hand_hooks(model, masked, means):
    """Hand-written hooks: each masked head's ``hook_z`` becomes its mean over the prompts."""
    by_layer: dict[int, list[int]] = {}
    for layer, head in masked:
        by_layer.setdefault(layer, []).append(head)

    def make(layer, heads):
        def hook(z, hook):
            z = z.clone()
            for h in heads:
                z[:, :, h] = means[layer][h]
            return z

        return hook

    return [(f"blocks.{layer}.attn.hook_z", make(layer, hs)) for layer, hs in by_layer.items()]


@pytest.mark.parametrize("name", ["lowk", "all_but_topk", "all_but_randomk"])
def test_masks_equal_hand_written_hooks(tiny, name):
    prompts = ["the cat sat on ", "a dog ", "one two three four "]
    means = head_means(tiny, prompts)
    tokens, mask = tokenize_left_padded(tiny, prompts)
    (sel,) = make_selections([name], RANK, 3, 4, salt="t")
    for k in (0, 3, 7):
        if k == 0 and not sel.kept:
            continue
        masked = sel.select(k, seed=1)
        with torch.inference_mode():
            with mask_heads(tiny, masked, "mean", values=means):
                got = tiny(tokens, attention_mask=mask)
            want = tiny.run_with_hooks(
                tokens, attention_mask=mask, fwd_hooks=_hand_hooks(tiny, masked, means)
            )
        torch.testing.assert_close(got, want, rtol=0, atol=0)


def _task(name, words):
    exs = [
        Example(id=str(i), task=name, prompt=f"say {w}", question=f"say {w}", answer=w)
        for i, w in enumerate(words)
    ]
    return Task(name, exs)


def _sweep(tiny, out, pack_rows=0):
    tasks = {"toy": _task("toy", ["a", "bb", "c d", "eee e", "f"])}
    cfg = SweepConfig(
        ks=[0, 2, N],
        seeds=2,
        max_new_tokens=4,
        selections=["topk", "lowk", "all_but_topk", "all_but_randomk"],
    )
    with pytest.warns(SweepWarning):
        return run_sweep(
            tiny,
            tasks,
            {"toy": RANK},
            cfg,
            [Accuracy(), ChrF(), AnswerLogprob(), KLUnmasked()],
            batch_size=2,
            out_dir=out,
            progress=False,
            pack_rows=pack_rows,
        )


def test_sweep_kept_sets_all_heads_is_unmasked_and_packed_equals_plain(tiny, tmp_path):
    plain = _sweep(tiny, tmp_path / "plain")
    packed = _sweep(tiny, tmp_path / "packed", pack_rows=6)
    assert plain.records.equals(packed.records) and plain.generations.equals(packed.generations)
    g = plain.generations.set_index(["selection", "k", "seed", "example_id"])[
        "generation"
    ].sort_index()
    base = g.loc["baseline", 0, 0]
    for sel, seed in (("AllButTopK", 0), ("AllButRandomK", 0), ("AllButRandomK", 1)):
        assert list(g.loc[sel, N, seed]) == list(base)  # keeping every head masks nothing
    # keeping no head is masking every head, whichever draw or ranking
    assert list(g.loc["AllButTopK", 0, 0]) == list(g.loc["AllButRandomK", 0, 1])
    assert list(g.loc["AllButTopK", 0, 0]) == list(g.loc["TopK", N, 0])
    assert set(plain.generations.query("selection == 'AllButTopK' and k == 0").heads) == {
        ",".join(f"L{a}H{b}" for a, b in RANK)
    }


def _rec(sel, k, seed, values):
    return [
        dict(task="t", selection=sel, seed=seed, k=k, metric="accuracy", label="Accuracy",
             example_id=str(i), value=float(v))
        for i, v in enumerate(values)
    ]  # fmt: skip


def test_significance_pairs_kept_sets_with_kept_controls():
    rows = _rec("baseline", 0, 0, [1] * 12) + _rec("TopK", 2, 0, [0] * 12)
    rows += _rec("AllButTopK", 2, 0, [1] * 12)
    for seed in range(5):
        rows += _rec("RandomK", 2, seed, [1] * 12) + _rec("AllButRandomK", 2, seed, [0] * 12)
    sig = significance(pd.DataFrame(rows)).set_index("control")
    assert sorted(sig.index) == ["AllButRandomK", "RandomK"]
    assert sig.loc["RandomK", "top_mean"] == 0 and sig.loc["RandomK", "control_mean"] == 1
    assert sig.loc["AllButRandomK", "top_mean"] == 1
    assert sig.loc["AllButRandomK", "control_mean"] == 0
