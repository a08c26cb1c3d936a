"""A run's inputs are one frozen object (config, folder, model, tasks, how the command runs them);
what the run records lives apart, in its ``RunRecord``."""

from __future__ import annotations

import dataclasses

import pytest

from interp_heads.config.run_config import RunConfig
from interp_heads.pipeline.record import RunRecord
from interp_heads.pipeline.state import Experiment, Invocation
from interp_heads.store.folder import RunFolder


def test_the_inputs_are_five_frozen_fields_and_the_record_is_apart(tmp_path):
    assert [f.name for f in dataclasses.fields(Experiment)] == [
        "config", "folder", "model", "tasks", "invocation",
    ]  # fmt: skip
    exp = Experiment(config=RunConfig(model="tiny"), folder=RunFolder(tmp_path), model=None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        exp.config = RunConfig(model="gpt2")
    with pytest.raises(dataclasses.FrozenInstanceError):
        exp.invocation.quiet = True
    record = RunRecord()
    record.note(status="running")
    assert record.manifest.status == "running" and not hasattr(exp, "manifest")


def test_a_step_sees_its_own_bar_only_when_listed():
    how = Invocation(quiet=True, bars=("known",))
    assert [how.for_step(s).quiet for s in ("baseline", "known", "report")] == [True, False, True]
    assert Invocation(quiet=False).for_step("known").quiet is False
    assert Invocation().sweep_options() == {"executor": None}  # run_sweep's own default
    assert Invocation(shared="s").sweep_options() == {"executor": None, "shared": "s"}
