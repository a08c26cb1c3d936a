"""``load_model`` as a user calls it: the same specs as ``--model``, one-line errors, no waiting."""

from __future__ import annotations

import time

import pytest
import torch

from interp_heads.model_info import source_of
from interp_heads.models.load import ModelLoadError, load_model
from interp_heads.models.official import hub_reachable
from interp_heads.models.specs import load_any_model


def test_tiny_loads_as_on_the_command_line():
    from interp_heads.testing.tiny import tiny_model

    model = load_model("tiny", device="cpu")
    want = tiny_model().state_dict()
    got = model.state_dict()
    assert got.keys() == want.keys()
    assert all(torch.equal(got[k], want[k]) for k in want)
    assert source_of(model)["spec"] == "tiny"


@pytest.mark.parametrize(
    "spec, match",
    [(123, "spec must be a model name or a path"), ("", "spec is empty"), ("  ", "spec is empty")],
)
def test_bad_specs_are_refused_without_looking_at_the_current_folder(
    untyped, tmp_path, monkeypatch, spec, match
):
    (tmp_path / "config.json").write_text("{}")  # a folder load_model("") must not try to load
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=match):
        load_model(spec)


def test_an_official_name_offline_fails_at_once(monkeypatch):
    """Not cached and no network: the clean message, without the hub's five retries."""
    import huggingface_hub

    from interp_heads.models.tl_compat import HookedTransformer

    calls = []
    monkeypatch.setattr(huggingface_hub, "try_to_load_from_cache", lambda *a, **k: None)
    monkeypatch.setattr(
        HookedTransformer, "from_pretrained_no_processing", lambda *a, **k: calls.append(a)
    )
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.perf_counter()
    with pytest.raises(ModelLoadError, match="Hugging Face hub\\) is unreachable"):
        load_model("gpt2", device="cpu")
    assert time.perf_counter() - start < 5
    assert calls == []


def test_hub_reachable_asks_once_and_gives_up_quickly(monkeypatch):
    from huggingface_hub import constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")  # nothing listens there
    start = time.perf_counter()
    assert hub_reachable(timeout=2.0) is False
    assert time.perf_counter() - start < 3
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    assert hub_reachable() is False


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_a_device_the_machine_lacks_is_a_clean_error():
    for load in (load_model, load_any_model):
        with pytest.raises(ValueError, match="CUDA is not available"):
            load("tiny", device="cuda")
    with pytest.raises(ValueError, match="unknown device"):
        load_model("tiny", device="gpu")
