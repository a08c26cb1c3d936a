"""Steps declare what they read and write: the plan refuses a step whose input nothing makes
(before the folder is claimed), each registered step's output type holds exactly its declared
writes, a step is handed only what it declares, and a run stores what each step returned under
its declared names."""

from __future__ import annotations

import dataclasses

import pytest

from interp_heads.errors import PipelineError
from interp_heads.pipeline.artefacts import PLANNED, Artefacts, outputs
from interp_heads.pipeline.experiment import RunConfig, attribute_steps, plan_steps, run_experiment
from interp_heads.pipeline.plan_check import check_step_inputs
from interp_heads.pipeline.steps import STEPS, PipelineStep
from tests.helpers import DATA

BASE = {
    "model": "tiny", "tasks": [str(DATA / "tiny_echo.jsonl")], "n_rank": 4, "n_eval": 6,
    "ks": [2], "selections": ["topk", "randomk"], "seeds": 1, "metrics": ["accuracy"],
    "max_new_tokens": 2, "batch_size": 8, "filter_correct": False, "attribution": "atp",
}  # fmt: skip
CONFIG = RunConfig.from_dict(BASE)

# What each built-in step writes, written out here by hand from the step functions (what each
# returns), so that a changed declaration or output type fails this test.
WRITES = {
    "baseline": {"baseline_table"}, "attribute": {"rankings", "fmts"}, "known": {"known_table"},
    "attention": {"attention"}, "sweep": {"sweep_result"}, "tables": set(),
    "specificity": {"specificity"}, "stability": {"stability"}, "sufficiency": {"sufficiency"},
    "report": {"index"},
}  # fmt: skip


def test_each_registered_step_returns_exactly_what_it_declares_it_writes():
    assert set(STEPS.names()) == set(WRITES)
    for step in STEPS.classes():
        assert set(step.writes) == WRITES[step.name], step.name
        assert dataclasses.is_dataclass(step.output), step.name
        assert step.output.__dataclass_params__.frozen, step.name
        assert {f.name for f in dataclasses.fields(step.output)} == set(step.writes), step.name


def test_a_return_other_than_the_declared_writes_is_refused():
    assert outputs("s", ("a",), {"a": 1}) == {"a": 1}
    with pytest.raises(TypeError, match=r"declares it writes \['a'\] but returned \['b'\]"):
        outputs("s", ("a",), {"b": 1})
    with pytest.raises(TypeError, match="returned int"):
        outputs("s", ("a",), 3)
    assert outputs("s", (), None) == {}


def test_the_whole_plans_pass_and_every_read_is_made_first():
    """An independent walk: each read is planned or in an earlier step's hand-written WRITES."""
    given = RunConfig.from_dict({**BASE, "heads": ["L0H1", "L1H0"]})
    full = RunConfig.from_dict({**BASE, "analyses": ["specificity", "stability"],
                                "sufficiency": True})  # fmt: skip
    for config, steps in ((CONFIG, plan_steps(CONFIG)), (given, plan_steps(given)),
                          (full, plan_steps(full)), (CONFIG, attribute_steps())):  # fmt: skip
        check_step_inputs(config, steps)
        have = set(PLANNED) - (set() if config.given_ranking else {"rankings"})
        for name in steps:
            assert set(STEPS.get(name).reads) <= have, name
            have |= WRITES[name]


def test_a_step_whose_input_nothing_makes_is_refused_with_one_line():
    with pytest.raises(PipelineError, match="step 'sweep' reads 'splits', 'rankings', which no"):
        check_step_inputs(CONFIG, ["sweep", "report"])  # no baseline, no attribute
    with pytest.raises(PipelineError, match="step 'tables' reads 'sweep_result'"):
        check_step_inputs(CONFIG, ["baseline", "attribute", "tables"])
    with pytest.raises(PipelineError, match="unknown pipeline step 'sweeps'"):
        check_step_inputs(CONFIG, ["baseline", "sweeps"])
    check_step_inputs(CONFIG, ["baseline", "attribute", "sweep", "tables"])


def test_an_unknown_config_section_is_refused(register):
    register(PipelineStep("odd", lambda exp, inputs, record: None, config=("sweeps",)))
    with pytest.raises(PipelineError, match="step 'odd' reads config section.*'sweeps'"):
        check_step_inputs(CONFIG, ["odd"])


def test_a_registered_step_reading_what_nothing_makes_is_refused_before_the_claim(
    register, tmp_path
):
    def never(exp, inputs, record):  # pragma: no cover - the plan refuses it first
        raise AssertionError("ran")

    register(PipelineStep("ghost_reader", never, reads=("ghost",), wanted=lambda config: True))
    out = tmp_path / "run"
    with pytest.raises(PipelineError, match="step 'ghost_reader' reads 'ghost', which no earlier"):
        run_experiment(CONFIG, out, quiet=True)
    assert not out.exists()  # refused before the folder was made or claimed


def test_a_step_gets_only_its_declared_inputs_and_its_outputs_are_stored(register, tmp_path):
    seen = {}

    def peek(exp, inputs, record):
        seen["splits"] = inputs.splits
        with pytest.raises(AttributeError, match="'peek' does not declare that it reads 'fmts'"):
            _ = inputs.fmts
        with pytest.raises(AttributeError, match="read-only"):
            inputs.splits = {}
        return {"n_eval": {t: len(ev) for t, (_, ev) in inputs.splits.items()}}

    register(PipelineStep("peek", peek, reads=("splits", "rankings"), writes=("n_eval",),
                          wanted=lambda config: True))  # fmt: skip
    _, made, record = run_experiment(CONFIG, tmp_path / "run", quiet=True)
    assert made["peek"] == {"n_eval": {"tiny_echo": 6}}
    store = record.artefacts
    assert store.get("n_eval") == {"tiny_echo": 6} and store.writer["n_eval"] == "peek"
    assert store.get("splits") is seen["splits"] and store.writer["splits"] == "plan"
    for name in plan_steps(CONFIG):  # every step's returned object, stored under its names
        for field in WRITES.get(name, ()):
            assert store.get(field) is getattr(made[name], field), (name, field)
            assert store.writer[field] == name
    assert store.get("rankings")["tiny_echo"].method == "atp"


def test_the_artefact_store_records_each_writer():
    store = Artefacts({"ks": [2]})
    store.put({"ks": [4], "rankings": {}}, "attribute")
    assert store.get("ks") == [4] and store.writer == {"ks": "attribute", "rankings": "attribute"}
    assert store.inputs("s", ["ks"]).ks == [4]


def test_only_the_runner_touches_the_artefact_store():
    """A step reads its declared inputs, never ``record.artefacts``: only the plan's builder, the
    step runner and the manifest writer use the store (an AST scan of the package)."""
    import ast

    from tests.helpers import ROOT

    allowed = {("pipeline/experiment.py", "build_experiment"), ("pipeline/steps.py", "run_steps"),
               ("pipeline/record.py", "write_manifest")}  # fmt: skip
    users = set()
    for file in (ROOT / "interp_heads").rglob("*.py"):
        module = file.relative_to(ROOT / "interp_heads").as_posix()
        for fn in ast.walk(ast.parse(file.read_text())):
            if isinstance(fn, ast.FunctionDef):
                for node in ast.walk(fn):
                    if isinstance(node, ast.Attribute) and node.attr == "artefacts":
                        users.add((module, fn.name))
    assert users == allowed
