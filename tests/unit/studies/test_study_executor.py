"""A study's executor is resolved through the EXECUTORS registry (``studies.runner.study_executor``):
a registered executor with ``run_runs`` runs a study's whole runs (a user's own too, under any
spelling the registry accepts), one without it is refused in one line before anything is
written, and the built-in ``local`` runs each run in this process in the study's order."""

from __future__ import annotations

from pathlib import Path

import pytest

from interp_heads.errors import PipelineError
from interp_heads.execution.registry import EXECUTORS
from interp_heads.execution.whole_runs import RunJob, Runs
from interp_heads.studies import STUDIES, Study, StudyRun, run_study
from interp_heads.studies.runner import run_one, study_executor
from tests.helpers import DATA, cli

TINY = str(DATA / "tiny.toml")


class _Reading(Study):
    """A ranking run and a run that reads its ranking, listed reader first."""

    name = "test_reading_executor"
    summary = "two tiny runs, one reading the other's folder"

    def runs(self, size):
        return [
            StudyRun("reading/reader", TINY, {"ranking": "{runs}/reading/rank"}),
            StudyRun("reading/rank", TINY, {}, steps="attribute"),
        ]

    def write_pages(self, folders, docs):
        return [Path(docs) / "none.md"]  # nothing written: the runs were never run


class _Recorder:
    """A user's executor: records what the runner hands it and runs nothing."""

    name = "test_recorder"
    aliases = ("test-recording",)
    seen: list = []

    @staticmethod
    def build(options, settings, model):
        raise AssertionError("a study never builds a sweep executor")

    @staticmethod
    def run_runs(runs, run_one_given):
        _Recorder.seen.append((runs, run_one_given))


@pytest.fixture
def setup(monkeypatch):
    import interp_heads.pipeline.experiment as experiment

    def never(*a, **k):
        raise AssertionError("the pipeline was called")

    monkeypatch.setattr(experiment, "run_pipeline", never)
    monkeypatch.setattr(experiment, "run_experiment", never)
    STUDIES.register(_Reading)
    EXECUTORS.register(_Recorder)
    _Recorder.seen = []
    yield
    STUDIES.unregister(_Reading.name)
    EXECUTORS.unregister(_Recorder.name)


def test_a_registered_executor_runs_the_studys_runs(setup, tmp_path):
    runs_dir = tmp_path / "runs"
    assert cli("study", _Reading.name, "--runs", runs_dir, "--docs", tmp_path / "docs",
               "--executor", "Test-Recording", "--force", "--quiet", "--ray-address", "here",
               "--cpus-per-run", "3") == 0  # fmt: skip
    ((runs, given),) = _Recorder.seen
    assert given is run_one
    assert isinstance(runs, Runs)
    assert [j.name for j in runs.jobs] == ["reading/reader", "reading/rank"]  # the study's order
    assert [[j.name for j in w] for w in runs.waves] == [["reading/rank"], ["reading/reader"]]
    reader, rank = runs.jobs
    assert (reader.folder, reader.steps) == (runs_dir / "reading" / "reader", "run")
    assert (rank.folder, rank.steps) == (runs_dir / "reading" / "rank", "attribute")
    assert reader.config.ranking == f"{runs_dir.as_posix()}/reading/rank"
    assert reader.config.shared_store == str(runs_dir / "shared")
    assert (runs.force, runs.quiet, runs.address, runs.cpus_per_run) == (True, True, "here", 3)
    assert not (runs_dir / "reading").exists()


@pytest.mark.parametrize("name", ["plain", "packed", "dask"])
def test_an_executor_without_run_runs_is_one_line_before_anything(setup, tmp_path, capsys, name):
    assert cli("study", _Reading.name, "--runs", tmp_path / "runs", "--docs", tmp_path / "docs",
               "--executor", name) == 2  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert f"study executor {name!r}: choose local, ray, test_recorder" in err
    assert not (tmp_path / "runs").exists() and not (tmp_path / "docs").exists()


def test_the_builtins_are_found_through_the_registry(setup):
    assert study_executor("local") == EXECUTORS.get("local").run_runs
    assert study_executor("RAY") == EXECUTORS.get("ray").run_runs
    EXECUTORS.unregister("test_recorder")
    with pytest.raises(PipelineError, match="'plain': choose local or ray$"):
        study_executor("plain")


def test_local_runs_every_job_in_order_in_this_process(tmp_path):
    jobs = tuple(RunJob(f"r{i}", {"i": i}, tmp_path / f"r{i}", s)
                 for i, s in enumerate(["attribute", "run", "run"]))  # fmt: skip
    calls = []
    runs = Runs(jobs, ((jobs[2],), (jobs[0], jobs[1])), force=True, quiet=False)
    EXECUTORS.get("local").run_runs(runs, lambda *args: calls.append(args))
    assert calls == [({"i": 0}, tmp_path / "r0", "attribute", True, False),
                     ({"i": 1}, tmp_path / "r1", "run", True, False),
                     ({"i": 2}, tmp_path / "r2", "run", True, False)]  # fmt: skip


def test_run_study_takes_the_executor_by_name(setup, tmp_path):
    pages = run_study(_Reading.name, tmp_path / "runs", size="small", docs=tmp_path / "d",
                      executor="test_recorder")  # fmt: skip
    assert pages == [tmp_path / "d" / "none.md"] and len(_Recorder.seen) == 1
