"""A study's runs share one generation store (``<runs>/shared``): a run differing from another only
in what it reads of the answers generates nothing, a resumed or extended study reuses the store,
``--no-shared`` and a plain ``interp-heads run`` use none."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from interp_heads.errors import PipelineError
from interp_heads.studies import STUDIES, Study, StudyRun, run_study
from tests.helpers import DATA, cli

TINY = str(DATA / "tiny.toml")
FEW = {"seeds": 2, "ks": [2], "selections": ["topk", "randomk"]}


class _Readers(Study):
    """Two runs that mask the same heads and score the answers with different metrics."""

    name = "test_readers"
    summary = "two tiny runs reading the same generations"

    def runs(self, size):
        return [
            StudyRun(f"readers/{m}", TINY, {"metrics": [m], **FEW}) for m in ("chrf", "accuracy")
        ]

    def write_pages(self, folders, docs):
        return []


@pytest.fixture
def readers():
    STUDIES.register(_Readers)
    yield _Readers
    STUDIES.unregister(_Readers.name)


def _shared(run) -> dict:
    return json.loads((run / "manifest.json").read_text())["shared_generations"]


def test_a_run_reading_other_metrics_generates_nothing(readers, tmp_path):
    runs = tmp_path / "runs"
    assert cli("study", "test_readers", "--runs", runs, "--docs", tmp_path / "docs") == 0
    first, second = _shared(runs / "readers" / "chrf"), _shared(runs / "readers" / "accuracy")
    assert first["generated"] == 4 and first["hits"] == 0  # baseline, TopK, 2 RandomK draws
    assert second["generated"] == 0 and second["hits"] == 4
    assert len(list((runs / "shared" / "generations").glob("*.json"))) == 4
    alone = tmp_path / "alone"  # the same run without the store: the same tables
    assert (
        cli("study", "test_readers", "--runs", alone, "--docs", tmp_path / "d2", "--no-shared") == 0
    )
    assert not (alone / "shared").exists()
    for m in ("chrf", "accuracy"):
        got = pd.read_parquet(runs / "readers" / m / "sweep.parquet")
        want = pd.read_parquet(alone / "readers" / m / "sweep.parquet")
        pd.testing.assert_frame_equal(got, want)
        assert (runs / "readers" / m / "generations.jsonl").read_bytes() == (
            alone / "readers" / m / "generations.jsonl"
        ).read_bytes()


def test_a_resumed_study_reuses_the_store(readers, tmp_path):
    runs = tmp_path / "runs"
    assert cli("study", "test_readers", "--runs", runs, "--docs", tmp_path / "docs") == 0
    shutil.rmtree(runs / "readers")  # every run folder lost: the store alone is left
    assert cli("study", "test_readers", "--runs", runs, "--docs", tmp_path / "docs") == 0
    assert _shared(runs / "readers" / "chrf") == {**_shared(runs / "readers" / "chrf"),
                                                  "generated": 0, "hits": 4}  # fmt: skip


def test_a_plain_run_uses_a_store_only_when_asked(tmp_path):
    (tmp_path / "c.toml").write_text(
        (DATA / "tiny.toml").read_text().replace("tests/data/", f"{DATA}/")
    )
    assert cli("run", "--config", tmp_path / "c.toml", "--out", tmp_path / "a", "--quiet") == 0
    assert "shared_generations" not in json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert not any(p.name == "generations" for p in tmp_path.rglob("*"))
    store = tmp_path / "store"
    args = ("run", "--config", tmp_path / "c.toml", "--quiet", "--shared-store", store)
    assert cli(*args, "--out", tmp_path / "b") == 0
    assert _shared(tmp_path / "b")["generated"] > 0
    assert cli(*args, "--out", tmp_path / "c") == 0
    assert _shared(tmp_path / "c")["generated"] == 0
    same = [pd.read_parquet(tmp_path / r / "sweep.parquet") for r in ("a", "c")]
    pd.testing.assert_frame_equal(*same)


def test_a_run_folder_named_like_the_store_is_refused(tmp_path):
    class Clash(Study):
        name = "clash"

        def runs(self, size):
            return [StudyRun("shared/x", TINY, FEW)]

    with pytest.raises(PipelineError, match="shared"):
        run_study(Clash(), tmp_path / "runs", docs=tmp_path / "docs")
    assert not (tmp_path / "runs").exists()
