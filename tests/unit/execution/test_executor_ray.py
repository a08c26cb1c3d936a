"""Sweeps on the Ray executor (2 CPU workers, tiny model) equal the local ones, also when a worker
is killed mid-sweep, and resume from conditions a local run stored."""

from __future__ import annotations

import os
import signal
import warnings

import pytest

from interp_heads.execution.local import PlainExecutor
from interp_heads.execution.ray import RayExecutor
from interp_heads.execution.registry import EXECUTORS
from interp_heads.heads import all_heads
from interp_heads.metrics import Accuracy, ChrF
from interp_heads.sweep.loop import SweepConfig, run_sweep
from interp_heads.tasks.schema import Example, Task
from tests.helpers import DATA

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.ray

WORDS = "abcdefghijkl"


def _task(name, n=10):
    exs = [
        Example(id=str(i), task=name, prompt=f"say {w}", question=f"say {w}", answer=w)
        for i, w in enumerate(WORDS[:n])
    ]
    return Task(name, exs)


@pytest.fixture(scope="module")
def ray_cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture
def grid(tiny):
    tasks = {"toy": _task("toy"), "echo": _task("echo", 7)}
    ranking = all_heads(3, 4)[::-1]
    cfg = SweepConfig(
        ks=[2, 4], seeds=2, ablation="mean", max_new_tokens=4, selections=["topk", "randomk"]
    )
    return tiny, tasks, {"toy": ranking, "echo": ranking[::-1]}, cfg


def _sweep(grid, **kw):
    model, tasks, ranks, cfg = grid
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # low baseline of a random model
        return run_sweep(
            model, tasks, ranks, cfg, [Accuracy(), ChrF()], batch_size=4, progress=False, **kw
        )


def _same(a, b):
    import pandas as pd

    pd.testing.assert_frame_equal(a.records, b.records)
    pd.testing.assert_frame_equal(a.generations, b.generations)


def test_unknown_executor_is_one_line():
    with pytest.raises(
        ValueError, match="unknown executor 'dask'; use one of local, plain, packed, ray"
    ):
        EXECUTORS.get("dask")


def test_plain_executor_equals_the_default_sweep(grid):
    _same(_sweep(grid, executor=PlainExecutor(grid[0])), _sweep(grid))


def test_ray_sweep_equals_local(grid, ray_cluster, tmp_path):
    local = _sweep(grid, out_dir=tmp_path / "local")
    with RayExecutor("tiny", fingerprint=None) as ex:
        remote = _sweep(grid, out_dir=tmp_path / "ray", executor=ex)
        assert len(ex.actors) == 2 and {i["threads"] for i in ex.info} == {1}
        assert sum(ex.stats["units"].values()) == 14 and ex.stats["retried"] == 0
    _same(remote, local)
    names = sorted(p.name for p in (tmp_path / "ray" / "conditions").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "local" / "conditions").iterdir())


def test_killed_worker_loses_and_duplicates_nothing(grid, ray_cluster, tmp_path):
    local = _sweep(grid)
    submitted = []

    def kill_third(executor, worker, unit):
        submitted.append(unit.key)
        if len(submitted) == 3:  # a unit was just handed to this worker: kill it mid-unit
            os.kill(executor.pids()[worker], signal.SIGKILL)

    with RayExecutor("tiny") as ex:
        ex.on_submit = kill_third
        remote = _sweep(grid, out_dir=tmp_path / "ray", executor=ex)
        assert ex.stats["retried"] >= 1  # the killed unit ran again
        assert sum(ex.stats["units"].values()) == 14  # and each unit was yielded once
    _same(remote, local)
    keys = ["task", "selection", "seed", "k", "metric", "example_id"]
    assert not remote.records.duplicated(keys).any()
    assert len(list((tmp_path / "ray" / "conditions").glob("*__*.json"))) == 14


def test_ray_resumes_a_partial_local_run(grid, ray_cluster, tmp_path):
    model, tasks, ranks, cfg = grid
    out = tmp_path / "run"
    _sweep((model, {"toy": tasks["toy"]}, ranks, cfg), out_dir=out)  # half of the grid, locally
    with RayExecutor("tiny") as ex:
        remote = _sweep(grid, out_dir=out, executor=ex)
        assert sum(ex.stats["units"].values()) == 7  # only the other task's conditions ran
    _same(remote, _sweep(grid))
    with RayExecutor("tiny") as ex:  # all stored: no actor is started
        _same(_sweep(grid, out_dir=out, executor=ex), remote)
        assert ex.actors == []


def test_ray_worker_must_load_the_drivers_model(ray_cluster):
    from interp_heads.execution.base import ExecutorError

    with pytest.raises(ExecutorError, match="different model than the driver"):
        RayExecutor("tiny", n_workers=1, fingerprint={"spec": "other"}).start()


def test_cli_run_on_ray_matches_the_tiny_golden(ray_cluster, tmp_path):

    from interp_heads.cli import main
    from interp_heads.testing.tiny import assert_matches_golden

    data = DATA
    out = tmp_path / "run"
    argv = ["run", "--config", str(data / "tiny.toml"), "--out", str(out), "--quiet"]
    assert main([*argv, "--executor", "ray", "--n-workers", "2"]) == 0
    assert_matches_golden(out, data / "golden" / "tiny")


def test_bad_placement_settings_are_one_line(tmp_path, capsys):

    from interp_heads.cli import main

    cfg = (DATA / "tiny.toml").read_text()
    bad = tmp_path / "bad.toml"
    bad.write_text(cfg + 'executor = "dask"\n')
    assert main(["run", "--config", str(bad), "--out", str(tmp_path / "a")]) == 2
    assert "executor = 'dask': unknown executor 'dask'; use one of local, plain, packed, ray" in (
        capsys.readouterr().err
    )
    good = tmp_path / "good.toml"
    good.write_text(cfg + "n_devices = 2\n")
    assert main(["run", "--config", str(good), "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert "n_devices=2 splits the model over 2 CUDA GPUs; this machine has 0" in err
    assert len(err.strip().splitlines()) == 1


def test_a_worker_that_cannot_load_the_model_is_one_line(ray_cluster):
    from interp_heads.execution.base import ExecutorError

    with pytest.raises(ExecutorError, match="a Ray worker could not load 'no-such-model'"):
        RayExecutor("no-such-model", n_workers=1).start()


def test_cli_ablate_on_ray_equals_local(ray_cluster, tmp_path):

    import pandas as pd

    from interp_heads.cli import main

    data = DATA / "tiny_echo.jsonl"
    argv = ["ablate", "--model", "tiny", "--task", str(data), "--heads", "L0H1,L1H2,L2H3,L0H0"]
    argv += ["--k", "2,4", "--seeds", "2", "--no-filter", "--max-new-tokens", "4", "--quiet"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main([*argv, "--out", str(tmp_path / "local")]) == 0
        assert main([*argv, "--out", str(tmp_path / "ray"), "--executor", "ray"]) == 0
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "ray" / "sweep.parquet"),
        pd.read_parquet(tmp_path / "local" / "sweep.parquet"),
    )
