"""The package keeps what it knows of a model beside it (``interp_heads.model_info``), never on
it: a whole tiny run leaves every module of the model with exactly the attributes it had."""

from __future__ import annotations

import gc
import json
import warnings
from dataclasses import FrozenInstanceError

import pytest

from interp_heads.model_info import ModelInfo, model_info, set_source, source_of, update_info
from interp_heads.testing.tiny import tiny_model
from tests.helpers import DATA


def _attributes(model) -> dict[str, set[str]]:
    """Every module's own attribute names, by module name ("" is the model)."""
    return {name: set(vars(module)) for name, module in model.named_modules()}


def test_a_tiny_run_sets_no_attribute_on_the_model(tmp_path, monkeypatch):
    from interp_heads.pipeline import experiment
    from interp_heads.pipeline.experiment import RunConfig, run_pipeline

    seen = {}
    load = experiment.load_any_model

    def loading(*args, **kwargs):
        model = load(*args, **kwargs)
        seen["model"], seen["loaded"] = model, _attributes(model)
        return model

    monkeypatch.setattr(experiment, "load_any_model", loading)
    config = RunConfig.from_dict({
        "model": "tiny", "tasks": [str(DATA / "tiny_echo.jsonl")], "n_rank": 4, "n_eval": 8,
        "ks": [2, 4], "selections": ["topk", "randomk", "layermatched"], "seeds": 2,
        "metrics": ["accuracy", "chrf"], "max_new_tokens": 4, "batch_size": 8,
        "filter_correct": False, "threads": 1,
    })  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the random model answers nothing
        run_pipeline(config, tmp_path / "run", quiet=True)
    model = seen["model"]
    # loading sets nothing of ours either: the attributes TransformerLens gives the same model
    assert seen["loaded"] == _attributes(tiny_model())
    assert _attributes(model) == seen["loaded"]
    assert not [k for k in vars(model) if "interp_heads" in k]
    # what the run knew of the model is beside it, and reached the manifest
    assert source_of(model) == {"spec": "tiny", "sha256": None}
    assert model_info(model).threads_watch and model_info(model).newline_tables is not None
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert {k: manifest["model"][k] for k in ("spec", "sha256")} == source_of(model)


def test_the_info_is_per_model_replaced_whole_and_goes_with_the_model():
    first, second = tiny_model(), tiny_model()
    set_source(first, spec="a", sha256="00")
    set_source(first, backend="hooked")  # adds to the source, keeps the rest
    update_info(first, alike_hooks=2)
    assert source_of(first) == {"spec": "a", "sha256": "00", "backend": "hooked"}
    assert source_of(second) == {} and model_info(second) == ModelInfo()
    info = model_info(first)
    with pytest.raises(FrozenInstanceError):
        info.alike_hooks = 3
    with pytest.raises(TypeError):
        info.source["spec"] = "b"
    source_of(first)["spec"] = "b"  # a copy
    assert source_of(first)["spec"] == "a" and model_info(first).alike_hooks == 2
    from interp_heads import model_info as table

    before = len(table._INFO)
    del first, info
    gc.collect()
    assert len(table._INFO) == before - 1
