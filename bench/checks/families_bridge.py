"""Families x backends: the bridge backend measured on random-weight checkpoints (tl4 environment).

The sibling of bench/checks/families.py (the hooked backend, default environment), run in the tl4
environment (``make setup-tl4``). For each family of :mod:`interp_heads.testing.checkpoints`: save a tiny
random checkpoint, load it with ``load_model(folder, backend="bridge")`` and measure against the HF
model itself: max |logit difference|, greedy tokens with one head masked on ``hook_z`` vs HF
``generate`` with that head's slice of the output projection's input zeroed by a forward-pre-hook,
KV cache vs none, packed sweep rows vs one condition at a time, and ``exact`` patching vs
TransformerLens 4's ``patching.get_act_patch_attn_head_out_all_pos``. Writes
bench/results/families_bridge.json and, from both JSON files, the families x backends table between
the markers in docs/models.md.

    .venv-tl4/bin/python -m bench.checks.families_bridge
"""

from __future__ import annotations

import json
import time

import torch

from bench import common
from interp_heads.attribution import exact_scores, make_batches
from interp_heads.execution.packed import PackedJob, generate_packed
from interp_heads.generation.decode import generate_tokens
from interp_heads.interventions.masks import mask_heads
from interp_heads.interventions.means import head_means
from interp_heads.models import load as models
from interp_heads.tasks.schema import Task
from interp_heads.testing.checkpoints import FAMILY_SPECS, hf_greedy_with_zeroed_head
from interp_heads.testing.tiny import PATCHING_EXAMPLES, tl_head_patching

PROMPTS, N_NEW = common.FAMILY_PROMPTS, common.FAMILY_NEW_TOKENS
TASK = Task("t", PATCHING_EXAMPLES[:1])


def _packed_equal(model) -> float:
    means = head_means(model, PROMPTS)
    jobs = [PackedJob(PROMPTS, [(0, 0), (1, 3)], means), PackedJob(PROMPTS[:2], [(1, 1)], means)]
    packed = generate_packed(model, jobs, "mean", N_NEW, pack_rows=3, stop_at_eos=False)
    hits = total = 0
    for job, got in zip(jobs, packed, strict=True):
        with mask_heads(model, job.heads, "mean", values=means):
            want = generate_tokens(model, job.prompts, N_NEW, stop_at_eos=False)
        want = [model.tokenizer.decode(r, skip_special_tokens=True) for r in want]
        hits += sum(g == w for g, w in zip(got, want, strict=True))
        total += len(want)
    return hits / total


def measure(spec) -> dict:
    folder, hf = common.family_checkpoint(spec)
    start = time.perf_counter()
    try:
        model = models.load_model(str(folder), device="cpu", backend="bridge")
    except models.ModelLoadError as exc:
        return {"family": spec.name, "bridge": "refused", "error": str(exc)}
    load_s = time.perf_counter() - start
    tokens, mask, ours, ref = common.logits_vs_hf(model, hf)
    hf_tokens = hf_greedy_with_zeroed_head(spec, hf, tokens, mask, (1, 2), model, N_NEW)
    with mask_heads(model, [(1, 2)], "zero"):
        cached = generate_tokens(model, PROMPTS, N_NEW, stop_at_eos=False)
        uncached = generate_tokens(model, PROMPTS, N_NEW, stop_at_eos=False, use_cache=False)
    exact = exact_scores(model, make_batches(model, TASK))
    tl_ref = tl_head_patching(model, TASK)
    return {
        "family": spec.name,
        "architecture": model.cfg.architecture,
        "bridge": "yes",
        "gqa": model.cfg.n_key_value_heads not in (None, model.cfg.n_heads),
        "max_abs_logit_diff_vs_hf": float((ours - ref).abs()[mask.bool()].max()),
        "masked_greedy_tokens_equal_hf_pre_hook": common.token_share(cached, hf_tokens),
        "cached_equals_uncached": common.token_share(cached, uncached),
        "packed_equals_plain": _packed_equal(model),
        "exact_vs_tl_patching_rel_diff": float(
            ((exact - tl_ref).abs() / tl_ref.abs().clamp(min=1)).max()
        ),
        "load_s": round(load_s, 2),
    }


def _cell(row: dict | None, backend: str) -> str:
    if row is None:
        return "not measured"
    if row.get(backend) != "yes":
        return f"refused ({row.get('error', '')[:70]}...)"
    fused = row.get("fused_layers")
    fused = "" if fused is None else (", fused on" if fused else ", fused off")
    return (
        f"logits {row['max_abs_logit_diff_vs_hf']:.0e}, masked greedy "
        f"{row['masked_greedy_tokens_equal_hf_pre_hook']:.0%}, cached "
        f"{row['cached_equals_uncached']:.0%}{fused}, exact "
        f"{row['exact_vs_tl_patching_rel_diff']:.0e}"
        + (f", packed {row['packed_equals_plain']:.0%}" if "packed_equals_plain" in row else "")
    )


def backends_table(hooked: list[dict], bridge: list[dict]) -> str:
    """The families x backends table from both benches' rows."""
    h, b = {r["family"]: r for r in hooked}, {r["family"]: r for r in bridge}
    lines = [
        "| family | hooked (TL 2.18, default env) | bridge (TL 4.3, tl4 env) |",
        "|---|---|---|",
    ]
    for name in FAMILY_SPECS:
        lines.append(
            f"| {name} | {_cell(h.get(name), 'hooked')} | {_cell(b.get(name), 'bridge')} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    torch.set_grad_enabled(False)
    rows = [measure(spec) for spec in FAMILY_SPECS.values()]
    common.result_path("families_bridge.json").write_text(json.dumps(rows, indent=1) + "\n")
    hooked = json.loads(common.result_path("families.json").read_text())
    table = backends_table(hooked, rows)
    common.replace_between_markers(common.ROOT / "docs" / "models.md", "backends-table", table)
    print(table)


if __name__ == "__main__":
    main()
