"""The head-sets study: one run per method and task (the probe one run over every task), its page
read from the run folders; the tables' and targets' wording from rows."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from interp_heads.studies import STUDIES, run_study
from interp_heads.studies.head_sets import HeadSets
from interp_heads.studies.head_sets_page import _steps, headline, logit_agrees, markdown, rows
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
    assert grid[0] == 0 and grid[-1] == 12 and ks == [3]
    page = (docs / "head_sets.md").read_text()
    assert "| `mean_ablation` (reference) |" in page and "`probe`" in page
    assert "- `retrieval_score` on tiny_echo: retrieval_score ranks the needle tasks only" in page


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
