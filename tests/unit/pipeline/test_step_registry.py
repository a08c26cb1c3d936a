"""The pipeline's steps are a registry: each step says when a run takes it, a run takes them in
registered order with the report last, and a user's registered step runs and is recorded."""

from __future__ import annotations

import json

import pytest

from interp_heads.pipeline.experiment import RunConfig, attribute_steps, plan_steps, run_pipeline
from interp_heads.pipeline.steps import STEPS, PipelineStep
from tests.helpers import DATA

BASE = {
    "model": "tiny", "tasks": [str(DATA / "tiny_echo.jsonl")], "n_rank": 4, "n_eval": 6,
    "ks": [2], "selections": ["topk", "randomk"], "seeds": 1, "metrics": ["accuracy"],
    "max_new_tokens": 2, "batch_size": 8, "filter_correct": False, "attribution": "atp",
}  # fmt: skip


def _plan(**over) -> list[str]:
    return plan_steps(RunConfig.from_dict({**BASE, **over}))


def test_each_config_gets_the_steps_it_asks_for():
    assert _plan() == ["baseline", "attribute", "known", "sweep", "tables", "report"]
    assert _plan(analyses=["stability", "specificity"], sufficiency=True) == [
        "baseline", "attribute", "known", "sweep", "tables", "specificity", "stability",
        "sufficiency", "report",
    ]  # fmt: skip
    given = _plan(heads=["L0H1", "L1H0"])  # a given ranking: nothing ranks the heads
    assert given == ["baseline", "sweep", "tables", "report"]
    assert attribute_steps() == ["baseline", "attribute", "known", "attention", "report"]


@pytest.fixture
def counting_step():
    def count(exp, inputs, record):
        path = exp.folder.root / "example_count.json"
        n = {task: len(ev) for task, (_, ev) in inputs.splits.items()}
        path.write_text(json.dumps(n))
        return {"example_count": n}

    step = PipelineStep(
        "example_count", count, reads=("splits",), writes=("example_count",),
        wanted=lambda config: "tiny" in config.model,
    )  # fmt: skip
    STEPS.register(step)
    yield step
    STEPS.unregister(step.name)


def test_a_registered_step_runs_before_the_report_and_is_recorded(counting_step, tmp_path):
    assert _plan()[-2:] == ["example_count", "report"]
    assert "example_count" not in plan_steps(RunConfig.from_dict({**BASE, "model": "gpt2"}))
    run_pipeline(RunConfig.from_dict(BASE), tmp_path / "run", quiet=True)
    assert json.loads((tmp_path / "run" / "example_count.json").read_text()) == {"tiny_echo": 6}
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["steps"][-2:] == ["example_count", "report"]


def test_a_registered_ranking_step_joins_attribute_before_the_report():
    STEPS.register(PipelineStep("note", lambda exp, inputs, record: None, ranks=True))
    try:
        assert attribute_steps()[-2:] == ["note", "report"]
        assert "note" not in _plan()  # not wanted by a whole run
    finally:
        STEPS.unregister("note")
    assert "note" not in attribute_steps()


def test_steps_are_looked_up_by_name_and_unknown_ones_refused():
    assert STEPS.get("sweep").name == "sweep"
    with pytest.raises(Exception, match="unknown pipeline step 'sweeps'"):
        STEPS.get("sweeps")
