"""The embedded SmolLM2 against Hugging Face's own model de-quantised from the same GGUF."""

from __future__ import annotations

import pytest
import torch

from interp_heads.generation.decode import generate_tokens, tokenize_left_padded
from interp_heads.models.load import load_model
from interp_heads.tasks.prompts import render
from interp_heads.testing.tiny import MIXED_PROMPTS as PROMPTS

pytestmark = pytest.mark.slow


def test_shape_and_tokens(smollm):
    assert (smollm.cfg.n_layers, smollm.cfg.n_heads, smollm.cfg.n_key_value_heads) == (30, 9, 3)
    assert smollm.tokenizer.eos_token_id == 2 and smollm.tokenizer.pad_token_id == 0
    assert smollm.cfg.rotary_base == 1e5
    rendered = render(smollm, ["Hi"])[0]
    tokens = smollm.to_tokens(rendered, prepend_bos=False)[0]
    assert tokens[0].item() == 1 and (tokens[:2] == 1).sum() == 1  # exactly one <|im_start|>


def test_logits_match_hf_on_a_padded_batch(smollm, hf_smollm):
    tokens, mask = tokenize_left_padded(smollm, render(smollm, PROMPTS))
    with torch.no_grad():
        ours = smollm(tokens, attention_mask=mask)
        theirs = hf_smollm(tokens, attention_mask=mask).logits
    real = mask.bool()
    assert (ours[real] - theirs[real]).abs().max().item() < 1e-3


def test_greedy_generation_matches_hf_token_for_token(smollm, hf_smollm):
    rendered = render(smollm, PROMPTS)
    ours = generate_tokens(smollm, rendered, 10, stop_at_eos=False)
    for prompt, mine in zip(rendered, ours, strict=True):
        ids = smollm.to_tokens(prompt, prepend_bos=False)
        out = hf_smollm.generate(
            ids, max_new_tokens=10, do_sample=False, pad_token_id=0, eos_token_id=None
        )
        assert out[0, ids.shape[1] :].tolist() == mine


def test_batched_cached_generation_equals_unbatched_uncached(smollm):
    rendered = render(smollm, PROMPTS[:4])
    batched = generate_tokens(smollm, rendered, 8)
    single = [generate_tokens(smollm, [p], 8, use_cache=False)[0] for p in rendered]
    assert batched == single


def test_warm_load_returns_identical_weights(smollm):
    again = load_model("smollm2-135m", device="cpu")
    for (name, a), (_, b) in zip(
        smollm.state_dict().items(), again.state_dict().items(), strict=True
    ):
        assert torch.equal(a, b), name


def test_conversion_reading_the_gguf_once_equals_transformers_own_loading(hf_smollm):
    """The cold-start path (one GGUF parse) gives Hugging Face's weights and tokenizer exactly."""
    from transformers import AutoTokenizer

    from interp_heads.models.convert import convert_checkpoint, state_dict_from_hf
    from interp_heads.models.load import embedded_gguf_path

    path = embedded_gguf_path()
    cfg, state_dict, tokenizer = convert_checkpoint(path.parent, path.name, torch.float32)
    theirs = state_dict_from_hf(hf_smollm, cfg)
    assert state_dict.keys() == theirs.keys()
    assert all(torch.equal(state_dict[k], theirs[k]) for k in theirs)
    reference = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    assert tokenizer.get_vocab() == reference.get_vocab()
    for text in [*PROMPTS, "The password is ring.\n<|im_end|>"]:
        assert tokenizer(text)["input_ids"] == reference(text)["input_ids"]
