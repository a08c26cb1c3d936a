"""The head-sets study: one run per method and task (the probe one run over every task), its page
read from the run folders; the tables' and targets' wording from rows."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import torch

from interp_heads.attribution import HeadScores
from interp_heads.studies import STUDIES, run_study
from interp_heads.studies.head_sets import HeadSets
from interp_heads.studies.head_sets.page import (
    _steps,
    agreement,
    headline,
    logit_agrees,
    markdown,
    rows,
)
from tests.helpers import DATA


class _TinyHeadSets(HeadSets):
    name = "test_head_sets"
    base = {"model": "tiny", "ks": [3], "selections": ["topk"], "seeds": 1, "ablation": "mean",
            "metrics": ["accuracy"], "max_new_tokens": 2, "batch_size": 4, "filter_correct": False,
            "sufficiency": True, "sufficiency_metrics": ["accuracy", "answer_logprob"],
            "n_rank": 4, "n_eval": 6, "sufficiency_seeds": 2}  # fmt: skip
    sizes = {}


@pytest.fixture
def tiny_study(tmp_path):
    lines = (DATA / "tiny_echo.jsonl").read_text().splitlines()
    other = tmp_path / "tiny_other.jsonl"
    other.write_text("\n".join(
        json.dumps({**json.loads(line), "task": "tiny_other"}) for line in lines) + "\n")  # fmt: skip
    tasks = (str(DATA / "tiny_echo.jsonl"), str(other))
    methods = ("mean_ablation", "gradxact", "retrieval_score", "probe")
    plan = {"tasks": tasks, "methods": methods, "changes": {}}
    study = type("T", (_TinyHeadSets,), {"sizes": {"small": plan, "full": plan}})
    STUDIES.register(study)
    yield study
    STUDIES.unregister(study.name)


def test_each_method_ranks_each_task_and_the_page_reads_their_folders(tiny_study, tmp_path):
    runs, docs = tmp_path / "runs", tmp_path / "docs"
    folders = {r.folder for r in tiny_study().runs("small")}
    assert folders == {"head_sets/tiny_echo/mean_ablation", "head_sets/tiny_echo/gradxact",
                       "head_sets/tiny_other/mean_ablation", "head_sets/tiny_other/gradxact",
                       "head_sets/probe"}  # fmt: skip
    run_study(tiny_study.name, runs, size="small", docs=docs, quiet=True)
    found, grid, ks = rows({f: runs / f for f in sorted(folders)}, "mean_ablation")
    assert {(r["task"], r["method"]) for r in found} == {
        (t, m) for t in ("tiny_echo", "tiny_other") for m in ("mean_ablation", "gradxact", "probe")
    }
    for r in found:  # each number as its own run folder's table has it, read independently
        folder = runs / ("head_sets/probe" if r["method"] == "probe" else f"head_sets/{r['task']}/{r['method']}")  # fmt: skip
        table = pd.read_csv(folder / "heads" / "sufficiency.csv")
        cpr = table[(table.task == r["task"]) & (table.metric == "answer_logprob")
                    & (table.curve == "ranking") & (table.measure == "cpr")]["value"].iloc[0]  # fmt: skip
        assert r["answer_logprob_cpr"] == pytest.approx(cpr, abs=1e-4)
        assert r["n_rank"] == 4 and r["n_eval"] == 6
        if r["method"] == "mean_ablation":  # the tiny model answers nothing: accuracy undefined
            assert r["spearman"] == 1.0 and r["accuracy_cpr"] is None and r["cpr_gap"] is None
            halves = json.loads((folder / "attribution" / f"{r['task']}.json").read_text())
            a, b = (pd.Series(sum(h, [])) for h in halves["provenance"]["split_half"]["scores"])
            assert r["held_out"] == pytest.approx(a.rank().corr(b.rank()), abs=1e-4)
    assert grid[0] == 0 and grid[-1] == 12 and ks == [3]
    page = (docs / "head_sets.md").read_text()
    assert "| `mean_ablation` (reference) |" in page and "`probe`" in page
    assert "- `retrieval_score` on tiny_echo: retrieval_score ranks the needle tasks only" in page


def _ranking(halves, ids=(1, 2, 3, 4)) -> HeadScores:
    """A 2-layer x 4-head ranking whose score is the mean of its two stored halves."""
    a, b = (torch.tensor(h, dtype=torch.float32).reshape(2, 4) for h in halves)
    split = {"n_examples": len(ids), "n_half": [2, 2], "scores": [a.tolist(), b.tolist()]}
    prov = {"example_ids": list(ids), "split_half": split, "rank_by": "signed"}
    return HeadScores((a + b) / 2, "m", "t", provenance=prov)


def test_agreement_with_the_reference_by_hand(monkeypatch):
    from scipy.stats import spearmanr

    from interp_heads.studies.head_sets import page as head_sets_page

    ref_a, ref_b = [8, 7, 6, 5, 4, 3, 2, 1], [7, 8, 6, 4, 5, 3, 1, 2]
    my_a, my_b = [1, 2, 8, 7, 6, 5, 4, 3], [2, 1, 7, 8, 6, 5, 3, 4]
    ref, mine = _ranking([ref_a, ref_b]), _ranking([my_a, my_b])
    got = agreement(mine, ref)
    whole = spearmanr(
        [a + b for a, b in zip(my_a, my_b, strict=True)],
        [a + b for a, b in zip(ref_a, ref_b, strict=True)],
    )
    held = (spearmanr(my_a, ref_b)[0] + spearmanr(my_b, ref_a)[0]) / 2
    assert got["spearman"] == pytest.approx(whole[0], abs=1e-4)
    assert got["held_out"] == pytest.approx(held, abs=1e-4) and got["held_out"] != got["spearman"]
    assert (got["top16"], got["top32"]) == (8, 8)  # all 8 heads of this model
    monkeypatch.setattr(head_sets_page, "TOPS", (2, 3))  # tops L0H2 L0H3 (L0H4) vs L0H0 L0H1 (L0H2)
    assert (agreement(mine, ref)["top2"], agreement(mine, ref)["top3"]) == (0, 1)
    assert agreement(ref, ref)["held_out"] == pytest.approx(spearmanr(ref_a, ref_b)[0], abs=1e-4)
    other = _ranking([my_a, my_b], ids=(4, 3, 2, 1))  # other examples (order): no held-out
    assert agreement(other, ref)["held_out"] is None


def test_steps_count_grid_positions():
    assert _steps(6, 2, [0, 1, 2, 6, 12]) == 1 and _steps(None, 2, [0, 2]) is None
    assert _steps(2, 6, [0, 1, 2, 6, 12]) == -1 and _steps(5, 2, [0, 2]) is None


def test_logit_agreement_across_methods():
    rows_ = [{"f_accuracy_k16": 0.9, "f_answer_logprob_k16": 0.7},
             {"f_accuracy_k16": 0.2, "f_answer_logprob_k16": 0.1},
             {"f_accuracy_k16": None, "f_answer_logprob_k16": 0.5}]  # fmt: skip
    assert logit_agrees(rows_, 16) == {"k": 16, "n_methods": 2, "same_sign": True,
                                       "same_order": True, "concordant": 1,
                                       "discordant": 0, "tied": 0}  # fmt: skip
    rows_[1]["f_answer_logprob_k16"] = -0.8
    got = logit_agrees(rows_, 16)
    assert not got["same_sign"] and got["same_order"]
    rows_[1]["f_answer_logprob_k16"] = 0.95
    assert not logit_agrees(rows_, 16)["same_order"]
    tied = [{"f_accuracy_k16": 0.0, "f_answer_logprob_k16": b} for b in (0.1, 0.3)]
    got = logit_agrees(rows_[:1] + tied, 16)  # accuracy ties: not counted against
    assert got["same_order"] and (got["concordant"], got["discordant"], got["tied"]) == (2, 0, 1)


def test_markdown_table_and_targets_from_rows():
    ref = {"task": "t", "method": "mean_ablation", "rank_seconds": 30.0, "accuracy_cpr": 0.8,
           "accuracy_cpr_low": 0.7, "accuracy_cpr_high": 0.9, "minimal_k": 14, "minimal_k_low": 5,
           "minimal_k_high": 27, "f_accuracy_k16": 0.9, "f_answer_logprob_k16": 0.8,
           "cpr_gap": 0.0, "minimal_k_steps": 0, "spearman": 1.0}  # fmt: skip
    mine = {**ref, "method": "ablation_atp", "accuracy_cpr": 0.72, "cpr_gap": -0.08,
            "minimal_k_steps": 2, "f_accuracy_k16": 0.5, "f_answer_logprob_k16": 0.6,
            "spearman": 0.4}  # fmt: skip
    text = markdown({"ks": [16], "rows": [ref, mine, {"task": "t", "method": "probe",
                                                      "skipped": "why"}]})  # fmt: skip
    assert "| t | `mean_ablation` | 30 |" in text and "0.80 [0.70, 0.90]" in text
    assert "14 [5, 27]" in text and "`probe`" not in text
    assert "CPR - reference -0.08 (below by more than 0.05)" in text and "+2 grid steps" in text
    assert "more than one" in text and "same sign True, same order True" in text
    table = headline({"reference": "mean_ablation", "rows": [ref, mine]})
    assert "| `mean_ablation` (reference) | 0.80 (+1.00) |" in table
    assert "| `ablation_atp` | 0.72 (+0.40) |" in table


def test_ranking_seconds_count_the_invocation_that_ranked():
    from interp_heads.studies.head_sets.page import _rank_seconds

    resumed = {"timings": {"t/attribution": 0.01}, "earlier_timings": [{"t/attribution": 12.0}]}
    assert _rank_seconds(resumed, "t", "atp") == pytest.approx(12.01)
    assert _rank_seconds({"timings": {"probe/attribution": 30.0}}, "t", "probe") == 30.0
    assert _rank_seconds({"timings": {}}, "t", "atp") == 0.0
