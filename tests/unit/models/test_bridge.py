"""The bridge backend (TransformerBridge, TransformerLens 4) on every family it serves.

Runs in the tl4 environment (``make test-tl4``); in the default environment only the one-line
refusal is checked. The references are independent of this toolkit: the HF model's own logits,
and a plain torch forward-pre-hook zeroing one head's slice of the HF output projection's input
(what a mask on ``hook_z`` must equal), run through HF's own ``generate``.
"""

from __future__ import annotations

import pytest
import torch

from interp_heads.generation.decode import generate_tokens, tokenize_left_padded
from interp_heads.generation.fast_attention import fast_attention
from interp_heads.generation.kv_cache import KVCache
from interp_heads.interventions.masks import mask_heads
from interp_heads.models import load as models
from interp_heads.models.backends import BRIDGE_FAMILIES, backend_of, n_kv_heads
from interp_heads.models.tl_compat import HAS_BRIDGE, HAS_HOOKED, BackendError
from interp_heads.store.resume import model_fingerprint
from interp_heads.testing.checkpoints import FAMILY_SPECS, hf_greedy_with_zeroed_head
from interp_heads.testing.tiny import assert_packed_equals_plain

PROMPTS = ["Hello there, my", "The cat sat on the", "a b"]
N_NEW = 8
needs_bridge = pytest.mark.skipif(not HAS_BRIDGE, reason="the bridge backend needs TL 4 (tl4 env)")


@pytest.fixture(scope="module", params=list(FAMILY_SPECS))
def family(request, tmp_path_factory):
    """(spec, HF model, our bridge model) for one family, loaded from its saved folder."""
    if not HAS_BRIDGE:
        pytest.skip("the bridge backend needs TransformerLens 4 (make setup-tl4)")
    from transformers import AutoModelForCausalLM

    spec = FAMILY_SPECS[request.param]
    folder = spec.save(tmp_path_factory.mktemp(spec.name))
    hf = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    model = models.load_model(str(folder), device="cpu", backend="bridge")
    return spec, hf, model


def test_every_family_is_served(family):
    spec, hf, model = family
    assert backend_of(model).name == "bridge" and type(hf).__name__ in BRIDGE_FAMILIES
    assert n_kv_heads(model) == getattr(hf.config, "num_key_value_heads", model.cfg.n_heads)


def test_logits_equal_hf(family):
    spec, hf, model = family
    tokens, mask = tokenize_left_padded(model, PROMPTS)
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        ours = model(tokens, attention_mask=mask)
        ref = hf(tokens, attention_mask=mask, position_ids=pos).logits
    assert (ours - ref).abs()[mask.bool()].max() <= 1e-4, spec.name


def test_head_mask_equals_zeroed_o_proj_slice_in_greedy_generation(family):
    spec, hf, model = family
    layer, head = 1, 2
    tokens, mask = tokenize_left_padded(model, PROMPTS)
    ref = hf_greedy_with_zeroed_head(spec, hf, tokens, mask, (layer, head), model, N_NEW)
    with mask_heads(model, [(layer, head)], "zero"):
        cached = generate_tokens(model, PROMPTS, N_NEW, stop_at_eos=False)
        plain = generate_tokens(model, PROMPTS, N_NEW, stop_at_eos=False, use_cache=False)
    assert cached == ref, spec.name
    assert plain == cached, spec.name
    unmasked = generate_tokens(model, PROMPTS, N_NEW, stop_at_eos=False)
    with torch.no_grad(), mask_heads(model, [(layer, head)], "zero"):
        masked_logits = model(tokens, attention_mask=mask)
    with torch.no_grad():
        assert not torch.allclose(masked_logits, model(tokens, attention_mask=mask))  # a real mask
    assert unmasked == generate_tokens(model, PROMPTS, N_NEW, stop_at_eos=False)


@pytest.mark.parametrize("positions", ["last", "generated"])
def test_masks_from_a_prompt_prefix_equal_hf_generate_with_the_slice_zeroed_there(
    family, positions
):
    """Conditions that start from the unmasked prompt pass (the hooked backend's prefix path on
    HF's own cache; ``generated``: the whole prompt, its first token from the prefix's logits),
    two conditions over one prefix and both of them in one batch of copies, against HF's
    ``generate`` with the head's slice zeroed by a pre-hook at those positions only."""
    from interp_heads.generation.prefix import PromptPrefixes
    from interp_heads.interventions.row_masks import RowMasks, mask_rows

    spec, hf, model = family
    tokens, mask = tokenize_left_padded(model, PROMPTS)
    heads = [(1, 2), (0, 1)]
    prefixes = PromptPrefixes(model, PROMPTS, whole=positions == "generated")
    assert len(prefixes) == 1
    gen = dict(stop_at_eos=False, prefixes=prefixes)
    unmasked = generate_tokens(model, PROMPTS, N_NEW, stop_at_eos=False)
    alone, scope_shows = [], False
    for head in heads:
        ref = hf_greedy_with_zeroed_head(spec, hf, tokens, mask, head, model, N_NEW, positions)
        with mask_heads(model, [head], "zero", positions=positions):
            alone.append(generate_tokens(model, PROMPTS, N_NEW, **gen))
        assert alone[-1] == ref != unmasked, (spec.name, head)
        everywhere = hf_greedy_with_zeroed_head(spec, hf, tokens, mask, head, model, N_NEW)
        scope_shows = scope_shows or ref != everywhere
    assert scope_shows, spec.name  # a mask at every position would have failed the check
    assert generate_tokens(model, PROMPTS, N_NEW, **gen) == unmasked  # the prefix is unmasked
    masks = RowMasks.build(model, [([h], "zero", None, 0) for h in heads], positions=positions)
    with mask_rows(model, masks, warn_if_idle=False) as handle:
        n = len(PROMPTS)

        def on_batch(idx):
            handle.rows = [i // n for i in idx]

        packed = generate_tokens(model, PROMPTS, N_NEW, copies=2, on_batch=on_batch, **gen)
    assert packed == alone[0] + alone[1], spec.name


def test_rows_that_stop_leave_the_batch_and_the_others_do_not_change(family, monkeypatch):
    from interp_heads.generation.prefix import PromptPrefixes
    from interp_heads.models.backends import bridge

    _, _, model = family
    prompts = PROMPTS * 3
    prefixes = PromptPrefixes(model, prompts, batch_size=len(prompts))
    gen = dict(stop_at_eos=False, batch_size=len(prompts), prefixes=prefixes)
    kept = []
    keep = bridge._HFCache.keep
    monkeypatch.setattr(bridge._HFCache, "keep", lambda c, rows: kept.append(rows) or keep(c, rows))
    with mask_heads(model, [(1, 2)], "zero", positions="last"):
        free = [a[: N_NEW - 1] for a in generate_tokens(model, prompts, N_NEW, **gen)]
        # a token that ends some answers before the budget and not others
        stop = next(t for a in free for t in a if 0 < sum(t in b for b in free) < len(free))
        gen["stop_after"] = model.tokenizer.convert_ids_to_tokens(stop)
        kept.clear()
        left = generate_tokens(model, prompts, N_NEW, **gen)
        monkeypatch.setattr(bridge._HFCache, "keep", lambda c, rows: False)  # every row stays
        whole = generate_tokens(model, prompts, N_NEW, **gen)
    assert left == whole
    assert kept and len({len(a) for a in left}) > 1  # rows stopped apart and left the batch


def test_kv_cache_step_fires_hook_z_on_every_new_token(family):
    _, _, model = family
    tokens, mask = tokenize_left_padded(model, PROMPTS[:2])
    seen = []
    cache = KVCache(model, 2)
    with (
        torch.no_grad(),
        model.hooks([("blocks.1.attn.hook_z", lambda z, hook: seen.append(z.shape))]),
    ):
        cache.step(tokens, mask, mask)
        nxt = torch.zeros((2, 1), dtype=torch.long)
        cache.step(nxt, torch.ones_like(nxt), torch.cat([mask, torch.ones_like(nxt)], 1))
    assert [s[1] for s in seen] == [tokens.shape[1], 1]
    assert seen[0][2:] == (model.cfg.n_heads, model.cfg.d_head)


def test_packed_equals_one_condition_at_a_time(family):
    assert_packed_equals_plain(family[2], PROMPTS, N_NEW)


def test_fused_attention_is_declared_off(family):
    _, _, model = family
    with fast_attention(model) as n_fused:
        assert n_fused == 0  # HF's eager attention runs; nothing is patched


def test_a_transformer_lens_cache_is_refused_not_ignored(family):
    _, _, model = family
    tokens, _ = tokenize_left_padded(model, PROMPTS[:1])
    with pytest.raises(BackendError, match="past_key_values"):
        model(tokens, past_kv_cache=[object()])


def test_fingerprint_names_the_backend(family):
    _, _, model = family
    fp = model_fingerprint(model)
    assert fp["sha256"] and fp["backend"] == "bridge"


@pytest.mark.skipif(HAS_BRIDGE, reason="this environment has the bridge backend")
def test_bridge_without_transformer_lens_4_is_a_one_line_error(tmp_path):
    folder = FAMILY_SPECS["llama"].save(tmp_path / "llama")
    with pytest.raises(models.ModelLoadError, match="make setup-tl4") as err:
        models.load_model(str(folder), device="cpu", backend="bridge")
    assert "\n" not in str(err.value)


@pytest.mark.skipif(HAS_HOOKED, reason="this environment has the hooked backend")
def test_hooked_without_transformer_lens_2_is_a_one_line_error(tmp_path):
    folder = FAMILY_SPECS["llama"].save(tmp_path / "llama")
    with pytest.raises(models.ModelLoadError, match="backend = 'bridge'") as err:
        models.load_model(str(folder), device="cpu")
    assert "\n" not in str(err.value)


def test_unknown_backend_is_a_one_line_error():
    with pytest.raises(models.ModelLoadError, match="choose one of hooked, bridge"):
        models.load_model("anything", device="cpu", backend="vllm")


@needs_bridge
def test_bridge_refuses_what_is_not_a_model_folder(tmp_path):
    (tmp_path / "weights.bin").write_bytes(b"x")
    for spec in (str(tmp_path / "weights.bin"), "gpt2"):
        with pytest.raises(models.ModelLoadError, match="local Hugging Face model folder"):
            models.load_model(spec, device="cpu", backend="bridge")


def test_exact_patching_equals_transformer_lens(family):
    """Attribution runs unchanged on the bridge: ``exact`` equals TL 4's own head patching."""
    from interp_heads.attribution import exact_scores, make_batches
    from interp_heads.tasks.schema import Task
    from interp_heads.testing.tiny import PATCHING_EXAMPLES, tl_head_patching

    spec, _, model = family
    task = Task("t", list(PATCHING_EXAMPLES)).subset(ids=["fr"])
    ref = tl_head_patching(model, task)
    ours = exact_scores(model, make_batches(model, task))
    assert torch.allclose(ours, ref, atol=1e-4, rtol=1e-4), (spec.name, (ours - ref).abs().max())


@pytest.mark.skipif(not HAS_BRIDGE, reason="the default environment has COMET")
def test_comet_in_the_tl4_environment_names_the_score_command():
    from interp_heads.metrics import MetricUnavailable, resolve_metrics

    with pytest.raises(MetricUnavailable, match="interp-heads score RUN --metrics comet") as err:
        resolve_metrics(["comet"])
    assert "\n" not in str(err.value)


def test_exact_patching_with_left_padding_equals_one_example_at_a_time(family):
    """Padded rows get their own positions on the bridge (a residual input derives none)."""
    from interp_heads.attribution import exact_scores, make_batches
    from interp_heads.tasks.schema import Task
    from interp_heads.testing.tiny import PATCHING_EXAMPLES

    spec, _, model = family
    task = Task("t", list(PATCHING_EXAMPLES)).subset(ids=["fr", "cat"])  # 25 and 24 bytes
    padded = exact_scores(model, make_batches(model, task, batch_size=len(task)))
    alone = exact_scores(model, make_batches(model, task, batch_size=1))
    assert torch.allclose(padded, alone, atol=1e-4, rtol=1e-4), (
        spec.name,
        (padded - alone).abs().max(),
    )
