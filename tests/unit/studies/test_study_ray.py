"""A study's runs on Ray (``--executor ray``, one task a run): the same tables as one after
another in this process, runs that read another's folder after it, a failing run named."""

from __future__ import annotations

import pandas as pd
import pytest

from interp_heads.errors import PipelineError
from interp_heads.studies import STUDIES, Study, StudyRun
from interp_heads.studies.runner import waves
from tests.helpers import DATA, cli

TINY = str(DATA / "tiny.toml")
FEW = {"seeds": 2, "ks": [2], "selections": ["topk", "randomk"], "metrics": ["accuracy"]}


class _Ranked(Study):
    """A ranking run, a run masking its ranking, and an independent run."""

    name = "test_ranked_on_ray"
    summary = "three tiny runs, one reading another's ranking"
    bad = False

    def runs(self, size):
        reader = {"ranking": "{runs}/ranked/rank", **FEW}
        if self.bad:  # a folder no run writes: the reader fails in its Ray task
            reader["ranking"] = "{runs}/ranked/nothing"
        return [
            StudyRun("ranked/rank", TINY, FEW, steps="attribute"),
            StudyRun("ranked/reader", TINY, reader),
            StudyRun("ranked/alone", TINY, {**FEW, "ablation": "zero"}),
        ]

    def write_pages(self, folders, docs):
        return []


def test_waves_put_a_run_after_the_folders_it_reads():
    run = lambda name, **ch: StudyRun(name, TINY, ch)  # noqa: E731
    a, b, c = run("a"), run("b", ranking="{runs}/a"), run("c", ranking="{runs}/ab")
    d = run("d", ranking="{runs}/b/ranking.csv")
    assert [[r.folder for r in w] for w in waves([d, a, b, c])] == [["a", "c"], ["b"], ["d"]]
    with pytest.raises(PipelineError, match="in a circle: x, y"):
        waves([run("x", ranking="{runs}/y"), run("y", ranking="{runs}/x")])


@pytest.fixture
def ranked():
    STUDIES.register(_Ranked)
    yield _Ranked
    STUDIES.unregister(_Ranked.name)


@pytest.mark.ray
def test_ray_runs_give_the_local_tables(ranked, tmp_path):
    pytest.importorskip("ray")
    local, on_ray = tmp_path / "local", tmp_path / "ray"
    assert cli("study", ranked.name, "--runs", local, "--docs", tmp_path / "d1") == 0
    assert cli("study", ranked.name, "--runs", on_ray, "--docs", tmp_path / "d2",
               "--executor", "ray") == 0  # fmt: skip
    assert (on_ray / "ranked" / "rank" / "ranking.csv").exists()
    for name in ("reader", "alone"):
        got = pd.read_csv(on_ray / "ranked" / name / "summary.csv")
        want = pd.read_csv(local / "ranked" / name / "summary.csv")
        pd.testing.assert_frame_equal(got.drop(columns="seconds", errors="ignore"),
                                      want.drop(columns="seconds", errors="ignore"))  # fmt: skip
    ranked.bad = True
    try:
        assert cli("study", ranked.name, "--runs", tmp_path / "bad", "--docs", tmp_path / "d3",
                   "--executor", "ray") != 0  # fmt: skip
    finally:
        ranked.bad = False
    assert (tmp_path / "bad" / "ranked" / "alone" / "summary.csv").exists()  # the others ran
