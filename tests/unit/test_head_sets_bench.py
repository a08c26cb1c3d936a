"""bench/head_sets.py on the tiny model: every method that can rank the task is judged by its
head sets beside the exact mean-ablation reference; the others say why they were skipped."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from interp_heads.tasks.io import read_task_file

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("head_sets", ROOT / "bench" / "head_sets.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
    assert {"answer_logprob_cmd", "answer_logprob_necessity_area"} <= set(ref)
    assert "spearman" in by["gradxact"] and "skipped" in by["probe"]
    assert bench._steps(6, 2, [0, 1, 2, 6, 12]) == 1 and bench._steps(None, 2, [0, 2]) is None
    out = tmp_path / "head_sets.json"
    bench.merge(rows, {"model": "tiny"}, out)
    bench.merge([{**ref, "cpr_gap": 9}], {"model": "tiny"}, out)
    saved = json.loads(out.read_text())["rows"]
    assert len(saved) == len(rows) and [r for r in saved if r.get("cpr_gap") == 9]
