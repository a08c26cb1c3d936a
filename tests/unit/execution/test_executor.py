"""The executor layer without Ray: settings, the missing-extra message, placement not in the digest."""

from __future__ import annotations

import sys

import pytest

from interp_heads.execution.base import ExecutorError
from interp_heads.execution.ray import RayExecutor
from interp_heads.pipeline.experiment import PipelineError, RunConfig


def test_ray_missing_is_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(ExecutorError) as err:
        RayExecutor("tiny")
    assert str(err.value) == "executor 'ray' needs `pip install interp_heads[ray]`"


def test_placement_is_validated_and_not_in_the_digest():
    base = RunConfig(model="tiny", tasks=["x"])
    moved = RunConfig(
        model="tiny", tasks=["x"], executor="ray", ray_address="h:1", n_workers=3, n_devices=2
    )
    assert moved.digest() == base.digest()  # a run folder resumes on any executor
    with pytest.raises(
        PipelineError, match="executor = 'spark': unknown executor 'spark'; use one of local, plain"
    ):
        RunConfig(model="tiny", tasks=["x"], executor="spark")
    with pytest.raises(PipelineError, match="n_workers = 0: must be greater than 0"):
        RunConfig(model="tiny", tasks=["x"], n_workers=0)


def test_n_devices_beyond_the_gpus_is_refused():
    from interp_heads.models.load import ModelLoadError, load_model

    with pytest.raises(ModelLoadError, match="n_devices=2 splits the model over 2 CUDA GPUs"):
        load_model("smollm2-135m", device="cpu", n_devices=2)
