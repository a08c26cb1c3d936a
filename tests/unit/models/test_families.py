"""Model families from a local folder: random-weight checkpoints checked against the HF model.

The references are independent of this toolkit: the HF model's own logits, and a plain torch
forward-pre-hook that zeroes one head's slice of the HF output projection's input (what a mask on
``hook_z`` must equal), run through HF's own ``generate``.
"""

from __future__ import annotations

import pytest
import torch

from interp_heads.generation.decode import generate_tokens, tokenize_left_padded
from interp_heads.generation.fast_attention import fast_attention, supports_fast_path
from interp_heads.interventions.masks import mask_heads
from interp_heads.models import load as models
from interp_heads.testing.checkpoints import FAMILY_SPECS, hf_greedy_with_zeroed_head
from interp_heads.testing.tiny import assert_packed_equals_plain

PROMPTS = ["Hello there, my", "The cat sat on the", "a b"]
SERVED = [name for name in FAMILY_SPECS if name != "olmo2"]
N_NEW = 8


@pytest.fixture(scope="module", params=SERVED)
def family(request, tmp_path_factory):
    """(spec, HF model, our model) for one family, loaded from its saved folder."""
    from transformers import AutoModelForCausalLM

    spec = FAMILY_SPECS[request.param]
    folder = spec.save(tmp_path_factory.mktemp(spec.name))
    hf = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    model = models.load_model(str(folder), device="cpu", use_cache=False)
    return spec, hf, model


def _hf_positions(mask):
    return (mask.cumsum(-1) - 1).clamp(min=0)


def test_logits_equal_hf(family):
    spec, hf, model = family
    tokens, mask = tokenize_left_padded(model, PROMPTS)
    with torch.no_grad():
        ours = model(tokens, attention_mask=mask)
        ref = hf(tokens, attention_mask=mask, position_ids=_hf_positions(mask)).logits
    assert (ours - ref).abs()[mask.bool()].max() <= 1e-4, spec.name


def test_head_mask_equals_zeroed_o_proj_slice_in_greedy_generation(family):
    spec, hf, model = family
    layer, head = 1, 2
    tokens, mask = tokenize_left_padded(model, PROMPTS)
    ref = hf_greedy_with_zeroed_head(spec, hf, tokens, mask, (layer, head), model, N_NEW)
    with mask_heads(model, [(layer, head)], "zero"):
        cached = generate_tokens(model, PROMPTS, N_NEW, stop_at_eos=False, fast_attention=False)
        plain = generate_tokens(
            model, PROMPTS, N_NEW, stop_at_eos=False, use_cache=False, fast_attention=False
        )
    assert cached == ref, spec.name
    assert plain == cached, spec.name
    with torch.no_grad(), mask_heads(model, [(layer, head)], "zero"):
        masked_logits = model(tokens, attention_mask=mask)
    with torch.no_grad():
        assert not torch.allclose(masked_logits, model(tokens, attention_mask=mask))  # a real mask


def test_a_lead_all_prompts_share_is_read_once_and_equals_hf_generation(family, monkeypatch):
    """Prompts that start alike (a system prompt): under a zero mask at every position the lead
    is read once for the batch where the family's positions allow it (no sliding window), and
    the greedy tokens equal HF ``generate`` with the head's ``o_proj`` input slice zeroed."""
    from interp_heads.generation.shared_start import model_allows
    from tests.helpers import SHARED_LEAD as LEAD
    from tests.helpers import shared_start_spy as spy

    spec, hf, model = family
    prompts = [LEAD + p for p in PROMPTS]
    tokens, mask = tokenize_left_padded(model, prompts)
    ref = hf_greedy_with_zeroed_head(spec, hf, tokens, mask, (1, 2), model, N_NEW)
    seen = spy(monkeypatch)
    with mask_heads(model, [(1, 2)], "zero"):
        got = generate_tokens(model, prompts, N_NEW, stop_at_eos=False)
    assert got == ref, spec.name
    assert len(seen) == (1 if model_allows(model) else 0), spec.name


def test_fused_attention_equal_or_declared_off(family):
    spec, _, model = family
    tokens, mask = tokenize_left_padded(model, PROMPTS)
    with torch.no_grad():
        ref = model(tokens, attention_mask=mask)
        with fast_attention(model) as n_fused:
            fused = model(tokens, attention_mask=mask)
    if n_fused == 0:
        assert not supports_fast_path(model.blocks[0].attn)  # declared off, e.g. Gemma 2's soft cap
    assert (fused - ref).abs()[mask.bool()].max() <= 1e-4, spec.name
    with mask_heads(model, [(0, 1)], "zero"):
        slow = generate_tokens(model, PROMPTS, N_NEW, stop_at_eos=False, fast_attention=False)
        fast = generate_tokens(model, PROMPTS, N_NEW, stop_at_eos=False, fast_attention=True)
    assert fast == slow, spec.name


def test_packed_equals_one_condition_at_a_time(family):
    assert_packed_equals_plain(family[2], PROMPTS, N_NEW)


def test_unserved_family_is_a_one_line_error(tmp_path):
    folder = FAMILY_SPECS["olmo2"].save(tmp_path / "olmo2")
    with pytest.raises(models.ModelLoadError) as err:
        models.load_model(str(folder), device="cpu", use_cache=False)
    message = str(err.value)
    assert "\n" not in message and "Olmo2ForCausalLM" in message and "supported:" in message


def test_exact_patching_equals_transformer_lens(family):
    """Attribution runs unchanged on every family: ``exact`` equals TL's own head patching."""
    from interp_heads.attribution import exact_scores, make_batches
    from interp_heads.tasks.schema import Task
    from interp_heads.testing.tiny import PATCHING_EXAMPLES, tl_head_patching

    spec, _, model = family
    task = Task("t", list(PATCHING_EXAMPLES)).subset(ids=["fr"])
    ref = tl_head_patching(model, task)
    ours = exact_scores(model, make_batches(model, task))
    assert torch.allclose(ours, ref, atol=1e-4, rtol=1e-4), (spec.name, (ours - ref).abs().max())
