"""The ground-truth study's manifest is written once per model, as it changes (an interrupted
study shows what it finished), and not once more after the last: the zoo's training and scoring
are replaced by stand-ins, so this counts the writes of ``run_zoo`` alone."""

from __future__ import annotations

import importlib
import json
from types import SimpleNamespace

import pandas as pd
import pytest

from interp_heads.errors import PipelineError


class _Model:
    accuracy, train_seconds, model, weights_sha256 = 1.0, 2.0, None, "ab" * 32

    def __init__(self, refused: bool):
        self.refused = refused

    def manifest(self) -> dict:
        return {"held_out_accuracy": self.accuracy, "train_seconds": self.train_seconds}

    def require_truth(self) -> None:
        if self.refused:
            raise PipelineError("below the accuracy bar")


@pytest.fixture
def stand_ins(monkeypatch):
    """Recipes ``a`` (scored) and ``b`` (refused) unless a test sets ``names``; every write of
    the store's writer recorded by file name."""
    import interp_heads.zoo.cache as cache
    import interp_heads.zoo.evaluate as evaluate
    import interp_heads.zoo.recipes as recipes

    atomic = importlib.import_module("interp_heads.store.atomic")  # the package names a function so
    state = SimpleNamespace(names=["a", "b"], writes=[])
    real = atomic.write_atomic

    def write(path, data):
        state.writes.append(path.name)
        real(path, data)

    def recipe(name):
        return SimpleNamespace(name=name, task="copy", digest=lambda: f"d{name}")

    monkeypatch.setattr(atomic, "write_atomic", write)
    monkeypatch.setattr(recipes, "recipes", lambda size: {n: recipe(n) for n in state.names})
    monkeypatch.setattr(cache, "zoo_model", lambda r: _Model(refused=r.name == "b"))
    monkeypatch.setattr(
        evaluate, "evaluate", lambda zm, n_prompts: {"truth": pd.DataFrame({"x": [1]})}
    )
    return state


def test_the_manifest_is_written_once_per_model(tmp_path, stand_ins):
    from interp_heads.studies.ground_truth import run_zoo

    run_zoo(tmp_path / "gt", "small", quiet=True)
    assert stand_ins.writes.count("manifest.json") == 2  # one per model, none after the loop
    assert stand_ins.writes.index("done.json") < stand_ins.writes.index("manifest.json")
    manifest = json.loads((tmp_path / "gt" / "manifest.json").read_text())
    assert sorted(manifest["models"]) == ["a", "b"] and "seconds" in manifest
    assert manifest["models"]["b"]["refused"] == "below the accuracy bar"
    assert (tmp_path / "gt" / "models" / "a" / "truth.csv").read_text() == "x\n1\n"


def test_a_size_without_models_still_writes_its_manifest(tmp_path, stand_ins):
    from interp_heads.studies.ground_truth import run_zoo

    stand_ins.names = []
    run_zoo(tmp_path / "gt", "small", quiet=True)
    assert stand_ins.writes == ["manifest.json"]
    assert json.loads((tmp_path / "gt" / "manifest.json").read_text())["models"] == {}
