"""bench/studies/head_sets.py on the tiny model: every method that can rank the task is judged by its
head sets beside the exact mean-ablation reference; the others say why they were skipped."""

from __future__ import annotations

import json

import pytest

from interp_heads.tasks.io import read_task_file
from tests.helpers import ROOT


@pytest.fixture(scope="module")
def bench():
    from bench.studies import head_sets

    return head_sets


def test_judge_on_the_tiny_model(bench, tiny, tmp_path):
    task = read_task_file(ROOT / "tests" / "data" / "tiny_echo.jsonl")
    rank, held_out = task.subset(n=10).split(4)
    methods = ["mean_ablation", "gradxact", "retrieval_score", "probe"]
    rankings = bench.rank_all(tiny, rank, methods)
    assert rankings["probe"][0] is None and "several tasks" in rankings["probe"][2]
    assert rankings["retrieval_score"][0] is None and rankings["retrieval_score"][2]
    rows = bench.judge(tiny, held_out, rankings, ks=[3], seeds=2, cache=tmp_path / "c",
                       n_boot=50, max_new_tokens=2)  # fmt: skip
    by = {r["method"]: r for r in rows}
    ref = by["mean_ablation"]
    assert ref["spearman"] == 1.0 and ref["answer_logprob_cpr"] is not None
    assert {"answer_logprob_cmd", "answer_logprob_necessity_area", "f_answer_logprob_k3"} <= set(
        ref
    )
    assert "spearman" in by["gradxact"] and "skipped" in by["probe"]
    assert bench._steps(6, 2, [0, 1, 2, 6, 12]) == 1 and bench._steps(None, 2, [0, 2]) is None
    out = tmp_path / "head_sets.json"
    bench.merge(rows, {"model": "tiny", "ks": [3]}, out)
    bench.merge([{**ref, "cpr_gap": 9}], {"model": "tiny", "ks": [3]}, out)
    saved = json.loads(out.read_text())
    assert len(saved["rows"]) == len(rows) and [r for r in saved["rows"] if r.get("cpr_gap") == 9]
    judged = [r for r in rows if "skipped" not in r]
    assert saved[f"logit_vs_accuracy_{held_out.name}"] == [
        bench.logit_agrees(judged, 3) | {"task": held_out.name}
    ]


def test_logit_agreement_across_methods(bench):
    rows = [{"f_accuracy_k16": 0.9, "f_answer_logprob_k16": 0.7},
            {"f_accuracy_k16": 0.2, "f_answer_logprob_k16": 0.1},
            {"f_accuracy_k16": None, "f_answer_logprob_k16": 0.5}]  # fmt: skip
    assert bench.logit_agrees(rows, 16) == {"k": 16, "n_methods": 2, "same_sign": True,
                                            "same_order": True, "concordant": 1,
                                            "discordant": 0, "tied": 0}  # fmt: skip
    rows[1]["f_answer_logprob_k16"] = -0.8
    got = bench.logit_agrees(rows, 16)
    assert not got["same_sign"] and got["same_order"]
    rows[1]["f_answer_logprob_k16"] = 0.95
    assert not bench.logit_agrees(rows, 16)["same_order"]
    tied = [{"f_accuracy_k16": 0.0, "f_answer_logprob_k16": b} for b in (0.1, 0.3)]
    got = bench.logit_agrees(rows[:1] + tied, 16)  # accuracy ties: not counted against
    assert got["same_order"] and (got["concordant"], got["discordant"], got["tied"]) == (2, 0, 1)


def test_probe_is_trained_once_on_every_task_and_rankings_resume(bench, tmp_path, monkeypatch):
    from interp_heads.attribution import probe as probe_module
    from interp_heads.heads import head_label
    from interp_heads.models.tl_compat import HAS_HOOKED
    from interp_heads.testing.planted import LABEL_HEAD, label_planted_model, label_planted_tasks

    if not HAS_HOOKED:
        pytest.skip("a planted HookedTransformer (no TL 4 twin)")
    model, tasks = label_planted_model(), label_planted_tasks()
    assert bench.probe_rankings(model, tasks[:1]) == {}
    got = bench.probe_rankings(model, tasks, cache=tmp_path)
    assert set(got) == {t.name for t in tasks}
    for name, entry in got.items():
        scores, _, why = entry["probe"]
        assert why == "" and scores.task == name
        assert scores.top_labels(1) == [head_label(*LABEL_HEAD)]

    def refuse(*_, **__):
        raise AssertionError("retrained although stored")

    monkeypatch.setattr(probe_module, "probe_heads", refuse)
    again = bench.probe_rankings(model, tasks, cache=tmp_path)
    for name in got:
        assert (again[name]["probe"][0].scores == got[name]["probe"][0].scores).all()
    with pytest.raises(AssertionError, match="retrained"):  # another task set: trained anew
        bench.probe_rankings(model, tasks[::-1], cache=tmp_path)

    first = bench.rank_all(model, tasks[0], ["gradxact", "probe"], cache=tmp_path,
                           given=got[tasks[0].name])  # fmt: skip
    assert first["probe"] is got[tasks[0].name]["probe"]
    monkeypatch.setattr(bench, "attribute_heads", refuse)
    stored = bench.rank_all(model, tasks[0], ["gradxact"], cache=tmp_path)["gradxact"][0]
    assert (stored.scores == first["gradxact"][0].scores).all()
    with pytest.raises(AssertionError, match="retrained"):  # other examples: ranked anew
        bench.rank_all(model, tasks[0].subset(n=len(tasks[0]) - 1), ["gradxact"], cache=tmp_path)


def test_markdown_table_and_targets_from_the_json():
    from bench.studies.head_sets_report import headline, markdown

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
