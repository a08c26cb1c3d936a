"""A step sees only the config sections it declares (``PipelineStep.config``): reading a field,
an option, a method's fields or the whole config outside them is refused with one line naming
the step, the field and its section; and every built-in step's declaration suffices for the runs
the tiny model makes (every step of a run, the analyses and the kept-set curves included)."""

from __future__ import annotations

import json

import pytest

from interp_heads.config.sections import SECTIONS
from interp_heads.pipeline.config_view import StepConfig, UndeclaredConfigRead, section_of
from interp_heads.pipeline.experiment import RunConfig, attribute_steps, plan_steps, run_experiment
from interp_heads.pipeline.steps import STEPS, PipelineStep
from tests.helpers import DATA

BASE = {
    "model": "tiny", "tasks": [str(DATA / "tiny_echo.jsonl")], "n_rank": 4, "n_eval": 6,
    "ks": [2], "selections": ["topk", "randomk"], "seeds": 1, "metrics": ["accuracy"],
    "max_new_tokens": 2, "batch_size": 8, "filter_correct": False, "attribution": "atp",
}  # fmt: skip
CONFIG = RunConfig.from_dict(BASE)


def test_a_declared_section_reads_as_the_config_and_others_are_refused():
    view = StepConfig(CONFIG, "s", ("tasks", "generation"))
    for name in ("n_rank", "n_eval", "tasks", "filter_correct", "batch_size", "max_new_tokens"):
        assert getattr(view, name) == getattr(CONFIG, name), name
    # the sections, by hand from config/sections.py's table
    assert (section_of("ks"), section_of("n_eval"), section_of("threads")) == (
        "sweep", "tasks", "model",
    )  # fmt: skip
    with pytest.raises(UndeclaredConfigRead) as refused:
        _ = view.ks
    assert str(refused.value) == (
        "step 's' reads config field 'ks' of section 'sweep', which it does not declare "
        "(its config sections: generation, tasks)"
    )
    with pytest.raises(AttributeError, match="read-only"):
        view.n_rank = 3


def test_methods_options_and_the_whole_config_are_checked_by_the_fields_they_read():
    view = StepConfig(CONFIG, "s", ("attribution",))
    assert view.method_class() is CONFIG.method_class()  # reads attribution only
    with pytest.raises(UndeclaredConfigRead, match="field 'ablation' of section 'ablation'"):
        view.method_options()  # method_settings reads the ablation too
    both = StepConfig(CONFIG, "s", ("attribution", "ablation"))
    assert both.method_options() == CONFIG.method_options()
    with pytest.raises(UndeclaredConfigRead, match="field 'ranking' of section 'ranking'"):
        _ = view.given_ranking  # a property, read against the view
    with pytest.raises(UndeclaredConfigRead, match="options .metrics. of section 'metrics'"):
        view.options("metrics")
    with pytest.raises(UndeclaredConfigRead, match=r"as a whole \(to_dict\)"):
        view.to_dict()
    every = StepConfig(CONFIG, "s", tuple(SECTIONS))
    assert every.to_dict() == CONFIG.to_dict() and every.digest() == CONFIG.digest()


def test_a_step_reading_an_undeclared_field_is_refused_in_a_run(register, tmp_path):
    def reads_n_eval(exp, inputs, record):
        return {"n": exp.config.n_eval}  # section 'tasks', not declared

    register(PipelineStep("undeclared", reads_n_eval, writes=("n",), config=("generation",),
                          wanted=lambda config: True))  # fmt: skip
    with pytest.raises(UndeclaredConfigRead, match="step 'undeclared' reads config field 'n_eval'"):
        run_experiment(CONFIG, tmp_path / "run", quiet=True)
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["status"] == "failed" and "'n_eval' of section 'tasks'" in manifest["error"]


RUN = ["baseline", "attribute", "known", "sweep", "tables"]
CASES = [  # a config's changes, the steps it runs (None: its plan), the steps expected by hand
    ({"analyses": ["specificity", "stability"], "sufficiency": True}, None,
     [*RUN, "specificity", "stability", "sufficiency", "report"]),
    ({"sufficiency": True, "sufficiency_search": True, "n_rank": 6}, None,
     [*RUN, "sufficiency", "report"]),
    ({"known_heads": False, "verify": 2, "ablation": "mean"}, "attribute",
     ["baseline", "attribute", "known", "attention", "report"]),
    ({"heads": ["L0H1", "L1H0"]}, None,  # a given ranking (ablate)
     ["baseline", "sweep", "tables", "report"]),
]  # fmt: skip


def test_the_runs_below_take_every_registered_step():
    assert {name for *_, names in CASES for name in names} == set(STEPS.names())


@pytest.mark.parametrize("changes, steps, expected", CASES)
def test_every_built_in_step_reads_only_its_declared_sections(changes, steps, expected, tmp_path):
    """Every built-in step a run of these configs takes runs against its declared sections."""
    config = CONFIG.changed(changes)
    names = attribute_steps() if steps == "attribute" else plan_steps(config)
    assert names == expected
    _, made, record = run_experiment(config, tmp_path / "run", quiet=True, steps=names)
    assert list(made) == names and record.manifest.steps == names
