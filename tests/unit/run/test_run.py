"""``run.Run`` and ``run.Manifest`` on run folders already on disk.

``tests/data/golden/run_tiny_main`` is a folder written by main before ``run/`` existed
(``interp-heads run --config tests/data/tiny.toml``, its figures and page left out): it must
load, lose nothing when its manifest is read and written back, and every artefact must equal
the file read independently (pandas, json)."""

from __future__ import annotations

import dataclasses
import json
import shutil

import pandas as pd
import pytest
import torch

from interp_heads.attribution import HeadScores
from interp_heads.errors import InputError
from interp_heads.run import MANIFEST_VERSION, Manifest, Run
from interp_heads.store.files import UnsafeFile
from tests.helpers import DATA

GOLDEN = DATA / "golden" / "run_tiny_main"
MANIFESTS = sorted(p for p in DATA.rglob("manifest.json"))


def test_there_are_golden_manifests():
    assert GOLDEN / "manifest.json" in MANIFESTS


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: str(p.relative_to(DATA)))
def test_every_manifest_on_disk_round_trips_losslessly(path):
    text = path.read_text()
    d = json.loads(text)
    m = Manifest.from_dict(d)
    back = m.to_dict()
    assert back == d
    assert list(back) == list(d)  # in the order on disk
    assert json.dumps(back, indent=1) == json.dumps(d, indent=1)
    assert m.version == MANIFEST_VERSION  # no version key on disk: version 1


def test_typed_fields_hold_what_the_file_says():
    d = json.loads((GOLDEN / "manifest.json").read_text())
    m = Manifest.from_dict(d)
    assert m.config == d["config"] and m.config["model"] == "tiny" == m.model_spec
    assert m.steps == d["steps"] and m.plan == d["plan"] and m.todo() == []
    assert m.splits.keys() == {"tiny_echo"}
    assert m.total_seconds == d["timings"]["total"]
    assert m.metric_cache == d["metric_cache"] and m.verification == d["verification"]
    assert not m.extra and m.get("metric_cache") == d["metric_cache"]  # every key has a field
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.status = "x"
    with pytest.raises(TypeError):
        m.extra["new"] = 1


def test_unknown_and_wrongly_typed_keys_are_kept():
    d = {"steps": "baseline", "novel": {"a": [1]}, "status": "complete", "plan": ["baseline"]}
    m = Manifest.from_dict(d)
    assert m.steps is None and m.extra["steps"] == "baseline"  # a hand-edited manifest
    assert m.todo() is None and m.status == "complete"
    assert m.to_dict() == d and list(m.to_dict()) == list(d)
    changed = dataclasses.replace(m, status="failed").to_dict()
    assert changed == {**d, "status": "failed"}


def test_versions():
    assert Manifest.from_dict({"manifest_version": 1, "a": 2}).to_dict() == {
        "manifest_version": 1,
        "a": 2,
    }
    with pytest.raises(InputError, match="newer"):
        Manifest.from_dict({"manifest_version": MANIFEST_VERSION + 1})
    with pytest.raises(InputError, match="not a version"):
        Manifest.from_dict({"manifest_version": "1"})
    with pytest.raises(InputError, match="JSON object"):
        Manifest.from_dict([1])
    assert Manifest.from_dict(None).to_dict() == {}


def test_every_artefact_equals_the_file_read_independently():
    run = Run.open(GOLDEN)
    pd.testing.assert_frame_equal(run.summary, pd.read_parquet(GOLDEN / "summary.parquet"))
    pd.testing.assert_frame_equal(run.records, pd.read_parquet(GOLDEN / "sweep.parquet"))
    pd.testing.assert_frame_equal(run.attribution, pd.read_parquet(GOLDEN / "attribution.parquet"))
    for name, file in [("baseline", "baseline.csv"), ("ranking", "ranking.csv"),
                       ("significance", "significance.csv"), ("known", "known_heads.csv")]:  # fmt: skip
        pd.testing.assert_frame_equal(
            run.read(name), pd.read_csv(GOLDEN / file, keep_default_na=False, na_values=[""])
        )
    gens = [json.loads(line) for line in (GOLDEN / "generations.jsonl").read_text().splitlines()]
    assert run.generations.to_dict("records") == gens
    assert run.known_entry == json.loads((GOLDEN / "known_heads.json").read_text())
    assert run.manifest.to_dict() == json.loads((GOLDEN / "manifest.json").read_text())
    assert run.manifest_dict() == run.manifest.to_dict()
    assert run.config["ks"] == [2, 4, 8] and run.timings == run.manifest.timings
    for absent in ("stability", "specificity", "sufficiency", "attention", "sufficient_sets"):
        assert run.read(absent) is None
    with pytest.raises(FileNotFoundError, match="stability.csv"):
        run.need("stability")


def test_rankings_are_the_stored_heads_scores():
    run = Run.open(GOLDEN)
    stored = HeadScores.load(GOLDEN / "attribution" / "tiny_echo.json")
    entry = run.scores("tiny_echo")
    assert torch.equal(entry.scores, stored.scores) and entry.provenance == stored.provenance
    table = run.rankings()["tiny_echo"]
    assert torch.allclose(table.scores, stored.scores.float())
    ranking = pd.read_csv(GOLDEN / "ranking.csv").sort_values("rank")
    assert run.ranked_heads()["tiny_echo"] == list(
        zip(ranking["layer"], ranking["head"], strict=True)
    )
    assert run.scores("no_such_task") is None


def test_refused_and_missing(tmp_path):
    with pytest.raises(InputError, match="no such run folder"):
        Run.open(tmp_path / "nope")
    with pytest.raises(InputError, match="not a run folder"):
        Run.open(tmp_path)
    with pytest.raises(TypeError):
        Run.open(3)
    copy = tmp_path / "run"
    shutil.copytree(GOLDEN, copy)
    (copy / "summary.parquet").unlink()
    (copy / "summary.parquet").symlink_to(GOLDEN / "summary.parquet")
    with pytest.raises(UnsafeFile, match="summary.parquet.*refused"):
        Run.open(copy).read("summary")
    (copy / "baseline.csv").write_bytes(b"\x00\xff garbage")
    (copy / "sweep.parquet").write_bytes(b"PAR1 not a table")
    with pytest.raises(InputError, match="sweep.parquet: unreadable"):
        Run.open(copy).read("records")


def test_a_manifest_read_and_written_back_is_the_same_file(tmp_path):
    from interp_heads.run import RunWriter

    RunWriter(tmp_path).manifest(Run.open(GOLDEN).manifest)
    assert (tmp_path / "manifest.json").read_bytes() == (GOLDEN / "manifest.json").read_bytes()
    d = json.loads((GOLDEN / "manifest.json").read_text())
    RunWriter(tmp_path).manifest(dataclasses.replace(Manifest.from_dict(d), status="failed"))
    assert json.loads((tmp_path / "manifest.json").read_text()) == {**d, "status": "failed"}


def test_with_updates_sets_keys_as_a_dict_update_would():
    d = {"steps": "baseline", "novel": 1, "status": "running"}
    m = Manifest.from_dict(d)
    changed = m.with_updates(steps=["baseline"], files={"outputs": []}, status="complete")
    expected = dict(d)  # the reference: a plain dict's update, which keeps each key's place
    expected.update(steps=["baseline"], files={"outputs": []}, status="complete")
    assert changed.to_dict() == expected and list(changed.to_dict()) == list(expected)
    assert changed.steps == ["baseline"] and "steps" not in changed.extra  # typed now
    assert m.to_dict() == d  # the manifest it came from is unchanged
    assert Manifest().with_updates(data={}, seeds={}).to_dict() == {"data": {}, "seeds": {}}
    with pytest.raises(TypeError, match="no field 'nope'"):
        m.with_updates(nope=1)
    assert list(m.with_extra("size", "small").to_dict()) == ["steps", "novel", "status", "size"]
    with pytest.raises(TypeError, match="with_updates"):
        m.with_extra("status", "x")
