"""A validated ``RunConfig`` cannot be changed in place: a change is a new config, validated
again; nothing assigns to it after validation."""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest

from interp_heads.config.reading import read_toml
from interp_heads.config.run_config import RunConfig
from interp_heads.errors import PipelineError

DATA = Path(__file__).resolve().parents[2] / "data"
TINY = DATA / "tiny.toml"


@pytest.mark.parametrize(
    ("name", "value"),
    [("threads", 2), ("seeds", 3), ("tasks", ["retrieval"]), ("n_workers", 2), ("_base_dir", None),
     ("_options", {}), ("not_a_key", 1)],
)  # fmt: skip
def test_assigning_to_a_validated_config_raises_and_changes_nothing(name, value):
    cfg = RunConfig.from_toml(TINY)
    before = (cfg.to_dict(), cfg.base_dir, cfg.digest())
    with pytest.raises(FrozenInstanceError, match="frozen"):
        setattr(cfg, name, value)
    with pytest.raises(FrozenInstanceError):
        delattr(cfg, "seeds")
    assert (cfg.to_dict(), cfg.base_dir, cfg.digest()) == before


def test_a_change_is_the_config_built_from_the_file_with_the_change():
    """The reference: the file's keys with the changes on top, built from scratch."""
    cfg = RunConfig.from_toml(TINY)
    changes = {"seeds": 3, "n_eval": 4, "threads": 1, "n_workers": 2, "baseline": "needed"}
    changed = cfg.changed(changes)
    fresh = RunConfig.from_dict({**read_toml(TINY), **changes})
    assert changed.to_dict() == fresh.to_dict()
    assert changed.digest() == fresh.digest() != cfg.digest()
    assert changed.base_dir == cfg.base_dir == TINY.resolve().parent  # relative tasks still resolve
    assert changed.task_path("tiny_echo.jsonl") == str(DATA.resolve() / "tiny_echo.jsonl")
    assert cfg.seeds == 2 and cfg.n_eval == 8  # the original is untouched
    assert changed.model_fields_set == fresh.model_fields_set


def test_a_change_is_validated_again():
    cfg = RunConfig.from_toml(TINY)
    with pytest.raises(PipelineError, match="threads"):
        cfg.changed({"threads": 0})
    with pytest.raises(PipelineError, match="unknown key.*no_such_key"):
        cfg.changed({"no_such_key": 1})
    with pytest.raises(PipelineError, match="^study run x: .*n_workers"):
        cfg.changed({"n_workers": 0}, source="study run x")
    with pytest.raises(PipelineError, match="elbow needs a ranking with scores"):
        cfg.changed({"heads": ["L0H1"], "elbow": True})  # the checks across keys run too
    with pytest.raises(PipelineError, match="seeds"):
        cfg.model_copy(update={"seeds": 0})  # pydantic's copy goes through the same check


def test_keys_left_at_their_default_stay_unset_through_a_change():
    """``resolved_ks``: with ``heads`` and no ``ks`` given, k is the number of heads."""
    cfg = RunConfig(model="tiny", tasks=["retrieval"], heads=["L0H1", "L1H0", "L1H2"])
    assert cfg.resolved_ks(16) == [3]
    assert cfg.changed({"seeds": 1}).resolved_ks(16) == [3]
    assert cfg.changed({"ks": [2]}).resolved_ks(16) == [2]


def test_a_study_run_config_is_changed_without_touching_the_file_config(tmp_path):
    from interp_heads.studies.base import StudyRun
    from interp_heads.studies.runner import study_config

    run = StudyRun("g", str(TINY), {"seeds": 4, "ranking": "{runs}/attr"})
    cfg = study_config(run, tmp_path, threads=1)
    assert (cfg.seeds, cfg.threads, cfg.ranking) == (4, 1, f"{tmp_path.as_posix()}/attr")
    assert cfg.base_dir == TINY.resolve().parent
    assert RunConfig.from_toml(TINY).seeds == 2


def test_the_run_commands_flags_win_over_the_file_in_a_new_config():
    from interp_heads.cli.early import command_config
    from interp_heads.cli.parser import build_parser

    argv = ["run", "--config", str(TINY), "--out", "x", "--threads", "2", "--n-workers", "3"]
    cfg = command_config(build_parser().parse_args(argv))
    fresh = RunConfig.from_dict({**read_toml(TINY), "threads": 2, "n_workers": 3})
    assert cfg.to_dict() == fresh.to_dict() and cfg.base_dir == TINY.resolve().parent
    plain = command_config(build_parser().parse_args(["run", "--config", str(TINY), "--out", "x"]))
    assert plain.to_dict() == RunConfig.from_toml(TINY).to_dict()
