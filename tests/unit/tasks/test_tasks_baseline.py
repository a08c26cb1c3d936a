"""Baseline evaluation and filtering, on the tiny random model."""

from __future__ import annotations

from interp_heads.tasks import Example, Task, evaluate_baseline, filter_correct
from interp_heads.tasks.baseline import BaselineResult


def _task():
    exs = [
        Example(
            str(i),
            "t",
            f"{i} + 1 =",
            str(i + 1),
            corrupted_prompt=f"{i} + 2 =",
            corrupted_answer="x",
        )
        for i in range(5)
    ]
    return Task("t", exs, meta={"fmt": "plain"})


def test_evaluate_baseline_runs(tiny):
    res = evaluate_baseline(tiny, _task(), max_new_tokens=3, corrupted=True)
    assert res.n == 5 and len(res.generations) == 5 and res.fmt == "plain"
    assert 0.0 <= res.accuracy <= 1.0 and res.corrupted_correct is not None
    frame = res.to_frame()
    assert list(frame.columns[:4]) == ["task", "id", "generation", "correct"] and len(frame) == 5


def test_filter_correct_uses_result_and_records_counts(tiny):
    task = _task()
    res = BaselineResult(
        "t", [e.id for e in task], ["1", "2", "0", "4", "0"], [True, True, False, True, False]
    )
    kept = filter_correct(tiny, task, result=res)
    assert [e.id for e in kept] == ["0", "1", "3"]
    assert kept.meta["filter"]["n_before"] == 5 and kept.meta["filter"]["n_after"] == 3
    assert kept.meta["fmt"] == "plain" and task.meta == {"fmt": "plain"}


def test_filter_correct_can_require_corrupted(tiny):
    task = _task()
    res = BaselineResult(
        "t", [e.id for e in task], ["g"] * 5, [True] * 5,
        corrupted_generations=["g"] * 5, corrupted_correct=[True, False, True, False, False],
    )  # fmt: skip
    kept = filter_correct(tiny, task, result=res, require_corrupted=True)
    assert [e.id for e in kept] == ["0", "2"] and kept.meta["filter"]["require_corrupted"]
