"""Families x backends, measured on random-weight checkpoints (by hand; offline, ~1 min on CPU).

For each family of :mod:`interp_heads.testing.checkpoints`: save a tiny random checkpoint, load it with
``load_model(folder)`` and measure against the HF model itself: max |logit difference|, greedy
tokens with one head masked on ``hook_z`` vs HF ``generate`` with that head's slice of the output
projection's input zeroed by a forward-pre-hook, KV cache vs none, fused attention, and ``exact``
patching vs TransformerLens' ``patching.get_act_patch_attn_head_out_all_pos``. Writes
bench/results/families.json and the table between the markers in docs/models.md.

    .venv/bin/python -m bench.checks.families
"""

from __future__ import annotations

import json
import time

import torch

from bench import common
from interp_heads.attribution import exact_scores, make_batches
from interp_heads.generation.decode import generate_tokens
from interp_heads.generation.fast_attention import fast_attention
from interp_heads.interventions.masks import mask_heads
from interp_heads.models import load as models
from interp_heads.tasks.schema import Task
from interp_heads.testing.checkpoints import FAMILY_SPECS, hf_greedy_with_zeroed_head
from interp_heads.testing.tiny import PATCHING_EXAMPLES, tl_head_patching

PROMPTS, N_NEW = common.FAMILY_PROMPTS, common.FAMILY_NEW_TOKENS
TASK = Task("t", PATCHING_EXAMPLES[:1])


def _tl_patching(model):
    ref = tl_head_patching(model, TASK)
    ours = exact_scores(model, make_batches(model, TASK))
    return float(((ours - ref).abs() / ref.abs().clamp(min=1)).max())


def measure(spec) -> dict:
    folder, hf = common.family_checkpoint(spec)
    start = time.perf_counter()
    try:
        model = models.load_model(str(folder), device="cpu", use_cache=False)
    except models.ModelLoadError as exc:
        return {"family": spec.name, "hooked": "refused", "error": str(exc)}
    load_s = time.perf_counter() - start
    tokens, mask, ours, ref = common.logits_vs_hf(model, hf)
    with fast_attention(model) as n_fused:
        fused = model(tokens, attention_mask=mask)
    hf_tokens = hf_greedy_with_zeroed_head(spec, hf, tokens, mask, (1, 2), model, N_NEW)
    with mask_heads(model, [(1, 2)], "zero"):
        kw = dict(stop_at_eos=False, fast_attention=False)
        cached = generate_tokens(model, PROMPTS, N_NEW, **kw)
        uncached = generate_tokens(model, PROMPTS, N_NEW, use_cache=False, **kw)
        fast = generate_tokens(model, PROMPTS, N_NEW, stop_at_eos=False, fast_attention=True)
    valid = mask.bool()
    return {
        "family": spec.name,
        "architecture": model.cfg.original_architecture,
        "hooked": "yes",
        "gqa": model.cfg.n_key_value_heads is not None,
        "max_abs_logit_diff_vs_hf": float((ours - ref).abs()[valid].max()),
        "masked_greedy_tokens_equal_hf_pre_hook": common.token_share(cached, hf_tokens),
        "cached_equals_uncached": common.token_share(cached, uncached),
        "fused_layers": n_fused,
        "fused_max_abs_logit_diff": float((fused - ours).abs()[valid].max()),
        "fused_greedy_tokens_equal": common.token_share(fast, cached),
        "exact_vs_tl_patching_rel_diff": _tl_patching(model),
        "load_s": round(load_s, 2),
    }


def _table(rows: list[dict]) -> str:
    head = (
        "| family | architecture | hooked backend | GQA | max abs logit diff vs HF | masked greedy "
        "tokens = HF pre-hook | cached = uncached | fused attention | exact vs TL patching |\n"
        "|---|---|---|---|---|---|---|---|---|\n"
    )
    lines = []
    for r in rows:
        if r["hooked"] != "yes":
            lines.append(f"| {r['family']} | - | refused: {r['error'][:90]}... | | | | | | |")
            continue
        fused = (
            f"on ({r['fused_layers']} layers, {r['fused_max_abs_logit_diff']:.1e}, tokens "
            f"{r['fused_greedy_tokens_equal']:.0%})"
            if r["fused_layers"]
            else "off (declared)"
        )
        lines.append(
            f"| {r['family']} | {r['architecture']} | yes | {'yes' if r['gqa'] else 'no'} | "
            f"{r['max_abs_logit_diff_vs_hf']:.1e} | {r['masked_greedy_tokens_equal_hf_pre_hook']:.0%} | "
            f"{r['cached_equals_uncached']:.0%} | {fused} | {r['exact_vs_tl_patching_rel_diff']:.1e} |"
        )
    return head + "\n".join(lines) + "\n"


def main() -> None:
    torch.set_grad_enabled(False)
    rows = [measure(spec) for spec in FAMILY_SPECS.values()]
    common.result_path("families.json").write_text(json.dumps(rows, indent=1) + "\n")
    common.replace_between_markers(
        common.ROOT / "docs" / "models.md", "families-table", _table(rows)
    )
    print(_table(rows))


if __name__ == "__main__":
    main()
