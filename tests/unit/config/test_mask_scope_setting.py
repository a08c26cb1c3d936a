"""The mask scope setting ``positions``: ``generated`` in the config, the CLI flag derived from it,
and the study's configs (the Cognitive Mirrors scope, and its one-choice variants that are not
about the scope)."""

from __future__ import annotations

import pytest

from interp_heads.config.run_config import RunConfig
from tests.helpers import ROOT


def test_generated_is_a_scope_of_the_config_and_of_the_cli_flag():
    from interp_heads.cli import build_parser
    from interp_heads.sweep.config import SweepConfig

    assert str(RunConfig(positions="generated").positions) == "generated"
    assert RunConfig(positions="generated").digest() != RunConfig(positions="last").digest()
    assert SweepConfig(ks=[2], positions="generated").mask_key() == {"positions": "generated"}
    sub = build_parser()._subparsers._group_actions[0].choices
    flag = {a.dest: a for a in sub["ablate"]._actions}["positions"]
    assert "generated" in flag.choices


def test_an_unknown_scope_is_one_line():
    with pytest.raises(ValueError, match="generated"):
        RunConfig(positions="prompt")


@pytest.mark.parametrize(
    "path",
    [
        "configs/cognitive_mirrors.toml",
        "configs/compare/mean_ablation.toml",
        "configs/compare/gold_reference.toml",
    ],
)
def test_the_study_configs_mask_the_generated_positions(path):
    assert str(RunConfig.from_toml(ROOT / path).positions) == "generated"


def test_a_given_ranking_of_a_method_that_cannot_estimate_the_sweeps_kind_is_accepted():
    """ablation_atp estimates a linear kind; a ranking it made elsewhere may be masked by scale."""
    from interp_heads.config.run_config import RunConfig
    from interp_heads.errors import PipelineError

    base = {
        "model": "tiny",
        "tasks": ["a.jsonl"],
        "attribution": "ablation_atp",
        "ablation": "scale",
    }
    with pytest.raises(PipelineError, match="no linear baseline"):
        RunConfig.from_dict(base)
    assert RunConfig.from_dict({**base, "ranking": "runs/x"}).ablation == "scale"
