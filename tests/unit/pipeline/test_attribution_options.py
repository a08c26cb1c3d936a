"""A method's own options reach the ranking and its resume key from the config (``steps``), and
the keys at the defaults are those stored before the options were config keys (recorded from
the tiny model: a change would make every stored ranking recompute)."""

from __future__ import annotations

import json
import warnings

import pytest

from interp_heads.pipeline.experiment import RunConfig, run_pipeline
from tests.helpers import DATA

SETTINGS = {
    "model": "tiny",
    "tasks": [str(DATA / "tiny_echo.jsonl")],
    "n_rank": 4,
    "n_eval": 4,
    "attribution": "ablation_ig",
    "ks": [2],
    "selections": ["topk"],
    "seeds": 1,
    "metrics": ["accuracy"],
    "max_new_tokens": 2,
    "batch_size": 4,
    "filter_correct": False,
    "verify": 0,
    "known_heads": False,
}
# the ranking's resume key as stored before its method's options were config keys
STORED_KEYS = {
    "ablation_ig": "5affeb72d2a45562c288328335f97426",
    "ablation_atp rivals 2 lookahead 1": "84723ec3e115054b5428421beff05ebf",
}


def _ranking(tmp_path, **over) -> dict:
    """The stored ranking's provenance, with what it measures (``metric``) added."""
    out = tmp_path / "-".join(f"{k}{v}" for k, v in over.items())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the random model answers nothing
        run_pipeline(RunConfig.from_dict({**SETTINGS, **over}), out, quiet=True)
    stored = json.loads((out / "attribution" / "tiny_echo.json").read_text())
    return {**stored["provenance"], "metric": stored["metric"]}


def test_steps_reaches_the_ranking_and_its_resume_key(tmp_path):
    default, two = _ranking(tmp_path), _ranking(tmp_path, steps=2)
    assert (default["steps"], two["steps"]) == (8, 2)
    assert "2 midpoint steps" in two["metric"]
    assert default["resume_key"] == STORED_KEYS["ablation_ig"]
    assert two["resume_key"] != default["resume_key"]


@pytest.mark.parametrize("steps", [8, None])
def test_the_ranking_key_at_the_options_defaults_is_the_stored_one(tmp_path, steps):
    over = {"steps": steps} if steps else {}
    assert _ranking(tmp_path, **over)["resume_key"] == STORED_KEYS["ablation_ig"]
    atp = _ranking(tmp_path, attribution="ablation_atp", rivals=2, lookahead=1)
    assert atp["resume_key"] == STORED_KEYS["ablation_atp rivals 2 lookahead 1"]
