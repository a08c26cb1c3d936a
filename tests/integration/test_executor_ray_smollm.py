"""The small SmolLM2 run on Ray (2 CPU workers, one killed mid-sweep) equals the local golden run.

``tests/data/golden/smollm`` holds the local outputs of ``tests/data/smollm_small.toml``; the same
config with ``--executor ray`` must give the same ranking, generations and tables.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from interp_heads.cli import main
from interp_heads.testing.tiny import assert_matches_golden

ray = pytest.importorskip("ray")
pytestmark = [pytest.mark.slow, pytest.mark.ray]

DATA = Path(__file__).parents[1] / "data"
CONFIG = DATA / "smollm_small.toml"


@pytest.fixture(scope="module")
def ray_cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_smollm_run_on_ray_with_a_killed_worker_matches_golden(ray_cluster, tmp_path, monkeypatch):
    from interp_heads.execution.ray import RayExecutor

    executors = []
    submitted = []

    def kill_fourth(executor, worker, unit):
        submitted.append(unit.key)
        if len(submitted) == 4:  # a unit was just handed to this worker: kill it mid-unit
            os.kill(executor.pids()[worker], signal.SIGKILL)

    init = RayExecutor.__init__

    def patched(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.on_submit = kill_fourth
        executors.append(self)

    monkeypatch.setattr(RayExecutor, "__init__", patched)
    out = tmp_path / "run"
    argv = ["run", "--config", str(CONFIG), "--out", str(out), "--quiet", "--executor", "ray"]
    # The golden attribution scores were made with 2 driver threads; the default share drops to 1
    # when other work loads the cores, and the scores then differ by ~4e-5 (relative).
    argv += ["--threads", "2"]
    assert main(argv) == 0
    (ex,) = executors
    assert ex.stats["workers"] == 2 and ex.stats["retried"] >= 1
    assert sum(ex.stats["units"].values()) == len(list((out / "conditions").glob("*__*.json")))
    assert_matches_golden(out, DATA / "golden" / "smollm")
