"""exclusive_topk, cross-task drop matrix, shared heads and split-half stability on hand examples."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest
import torch
from scipy.stats import spearmanr

from interp_heads.analysis.specificity import (
    cross_task_records,
    drop_matrix,
    exclusivity,
    shared_heads,
)
from interp_heads.attribution import HeadScores
from interp_heads.attribution.stability import agreement, split_half
from interp_heads.heads import all_heads
from interp_heads.interventions.selections import ExclusiveTopK, make_selections
from interp_heads.metrics import Accuracy
from interp_heads.sweep.loop import SweepConfig, plan_conditions
from interp_heads.tasks.schema import Example, Task


def test_exclusive_topk_skips_other_tasks_top_k():
    mine = [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0)]
    other = [(0, 1), (1, 1), (0, 0), (1, 2)]
    sel = ExclusiveTopK(tuple(mine), (tuple(other),))
    assert sel.select(2) == [(0, 0), (0, 2)]  # other's top 2 = {(0,1), (1,1)}
    assert sel.select(3) == [(0, 2), (0, 3), (1, 0)]  # other's top 3 adds (0,0)
    with pytest.raises(ValueError, match="exceeds"):
        sel.select(5)
    (made,) = make_selections(["exclusive_topk"], mine, 2, 4, others=[other])
    assert made.select(2) == sel.select(2) and made.display == "ExclusiveTopK"


def test_plan_names_exclusive_condition():
    cfg = SweepConfig(ks=[2], seeds=1, selections=["topk", "exclusive_topk"])
    ranking, other = all_heads(3, 4), all_heads(3, 4)[1:]
    plan = plan_conditions(cfg, ranking, 3, 4, "a", [other])
    assert [(s, h) for s, _, _, h in plan[1:]] == [
        ("TopK", [(0, 0), (0, 1)]),
        ("ExclusiveTopK", [(0, 0), (0, 3)]),
    ]


def _scores(values, task="t"):
    return HeadScores(
        torch.tensor(values, dtype=torch.float), "m", task, provenance={"rank_by": "signed"}
    )


def test_agreement_against_scipy_and_hand():
    a = _scores([[4.0, 3.0, 2.0], [1.0, 0.5, 0.0]])
    b = _scores([[4.0, 0.0, 2.0], [3.0, 0.5, 1.0]])
    got = agreement(a, b, [2, 3])
    rho = spearmanr(a.scores.flatten(), b.scores.flatten()).statistic
    assert got.spearman.iloc[0] == pytest.approx(rho)
    # top2: {L0H0, L0H1} vs {L0H0, L1H0}: 1/3;  top3: + L0H2 both: 2/4
    assert got.jaccard.tolist() == pytest.approx([1 / 3, 0.5])
    assert got.shared.tolist() == [1, 2] and got.unstable.tolist() == [False, False]


def test_split_half_on_tiny(tiny):
    exs = [Example(str(i), "t", f"Say {w}:", w) for i, w in enumerate("abcdef")]
    frame = split_half(tiny, Task("t", exs), [2, 4], "gradxact")
    assert frame.n_examples.tolist() == [6, 6] and frame.n_half.tolist() == [3, 3]
    assert frame.jaccard.between(0, 1).all() and frame.spearman.between(-1, 1).all()
    with pytest.raises(ValueError, match=">= 4 rank examples"):
        split_half(tiny, Task("t", exs[:3]), [2])


def test_drop_matrix_hand():
    rows = []
    for ex, base, masked in [("1", 1, 0), ("2", 1, 1), ("3", 1, 0), ("4", 0, 0)]:
        rows.append(
            dict(source="a", task="b", selection="baseline", k=0, example_id=ex, value=base)
        )
        rows.append(dict(source="a", task="b", selection="TopK", k=2, example_id=ex, value=masked))
    frame = drop_matrix(pd.DataFrame(rows).assign(metric="accuracy"))
    assert frame["drop"].tolist() == [0.5] and frame.n.tolist() == [4]
    assert 0 <= frame.ci_low.iloc[0] <= 0.5 <= frame.ci_high.iloc[0] <= 1


def test_shared_and_exclusive_counts():
    r = {
        "a": [(0, 0), (1, 1), (2, 2)],
        "b": [(1, 1), (0, 0), (0, 3)],
        "c": [(0, 0), (2, 1), (1, 1)],
    }
    assert shared_heads(r, 2) == [(0, 0)]
    assert shared_heads(r, 3) == [(0, 0), (1, 1)]
    ex = exclusivity(r, [3]).set_index("task")
    assert ex.shared_by_all.tolist() == [2, 2, 2]
    assert ex.exclusive.tolist() == [1, 1, 1] and ex.layer0.tolist() == [1, 2, 1]


def test_cross_task_records_mask_source_topk(tiny, tmp_path):
    tasks = {n: Task(n, [Example(f"{n}{i}", n, f"say {w}", w) for i, w in enumerate("abc")])
             for n in ("x", "y")}  # fmt: skip
    rankings = {"x": all_heads(3, 4), "y": all_heads(3, 4)[::-1]}
    cfg = SweepConfig(ks=[2], seeds=1, max_new_tokens=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a random model's low baseline
        rec = cross_task_records(
            tiny, tasks, rankings, cfg, lambda s: tmp_path / s, metrics=[Accuracy()]
        )
    assert set(map(tuple, rec[["source", "task"]].drop_duplicates().values)) == {
        ("x", "x"),
        ("x", "y"),
        ("y", "x"),
        ("y", "y"),
    }
    assert set(rec.selection) == {"baseline", "TopK"}
    assert (tmp_path / "x" / "conditions").is_dir() and (tmp_path / "y" / "conditions").is_dir()


def test_report_flags_unstable_ranking(tmp_path):
    from interp_heads.report.which_heads import which_heads_parts

    assert which_heads_parts(tmp_path) == []
    (tmp_path / "heads").mkdir()
    pd.DataFrame(
        [
            dict(
                task="a",
                k=8,
                jaccard=0.2,
                shared=3,
                spearman=0.4,
                unstable=True,
                n_examples=24,
                n_half=12,
            ),
            dict(
                task="b",
                k=8,
                jaccard=0.8,
                shared=7,
                spearman=0.9,
                unstable=False,
                n_examples=24,
                n_half=12,
            ),
        ]
    ).to_csv(tmp_path / "heads" / "stability.csv", index=False)
    pd.DataFrame(
        [
            dict(source=s, task=t, k=8, drop=0.5, ci_low=0.4, ci_high=0.6, n=10)
            for s in "ab"
            for t in "ab"
        ]
    ).to_csv(tmp_path / "heads" / "specificity.csv", index=False)
    page = "".join(which_heads_parts(tmp_path))
    assert page.count("<b>unstable</b>") == 1 and "<td>a</td>" in page.split("<b>unstable</b>")[0]
    assert "Cross-task specificity" in page
