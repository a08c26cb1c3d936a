"""Benchmark head attribution on SmolLM2: atp, exact, and TransformerLens' head patching.

8 plain-format prompts of about 48 tokens (who-lives-where retrieval, clean and corrupted differ in
the queried name). Times ``atp`` and ``exact`` (median of a few repeats) and TransformerLens'
``patching.get_act_patch_attn_head_out_all_pos`` (once: ~5 minutes), asserts that exact equals
TransformerLens' result, writes bench/results/attribution.json. Run by hand, not in CI:

    .venv/bin/python -m bench.speed.bench_attribution [--repeats 3] [--skip-tl] [--tl-heads 270]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import time

import pandas as pd
import torch
from transformer_lens import patching

from bench.common import bench_task, result_path
from interp_heads.attribution import atp_scores, exact_scores, make_batches
from interp_heads.attribution.inputs import logit_diff
from interp_heads.models.load import load_model

OUT = result_path("attribution.json")


def timed(fn, repeats: int) -> tuple[list[float], object]:
    runs, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        runs.append(round(time.perf_counter() - t, 3))
    return runs, out


def tl_exact(model, batch, heads=None):
    with torch.no_grad():
        clean_logits, cache = model.run_with_cache(
            batch.clean, names_filter=lambda n: n.endswith("hook_z")
        )
        ld_clean = logit_diff(clean_logits[:, -1], batch).mean()
        ld_corr = logit_diff(model(batch.corrupted)[:, -1], batch).mean()

    def metric(logits):
        return (logit_diff(logits[:, -1], batch).mean() - ld_corr) / (ld_clean - ld_corr)

    if heads is None:
        return patching.get_act_patch_attn_head_out_all_pos(
            model, batch.corrupted, cache, metric
        ).cpu()
    # the same function (generic_activation_patch on z, one forward per head) on a subset of heads
    index = pd.DataFrame(heads, columns=["layer", "head"])
    setter = patching.layer_head_vector_patch_setter
    return patching.generic_activation_patch(
        model, batch.corrupted, cache, metric, setter, "z", index_df=index
    ).cpu()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--skip-tl",
        action="store_true",
        help="reuse the TransformerLens timing in the results file",
    )
    ap.add_argument(
        "--tl-heads",
        type=int,
        default=270,
        help="time TransformerLens on this many evenly spread heads and extrapolate x 270/n "
        "(its cost is one full forward per head); 270 = get_act_patch_attn_head_out_all_pos itself",
    )
    args = ap.parse_args()
    model = load_model(device="cpu")
    task = bench_task()
    batches = make_batches(model, task, batch_size=8, fmt="plain")
    (batch,) = batches
    assert bool(batch.mask.all()), "bench prompts must have one length"
    print(
        f"{len(task)} prompts x {batch.clean.shape[1]} tokens; first difference at {batch.first_diff}"
    )
    results: dict = {
        "model": "smollm2-135m",
        "n_prompts": len(task),
        "n_tokens": int(batch.clean.shape[1]),
        "first_diff": batch.first_diff,
        "torch_threads": torch.get_num_threads(),
        "load_avg_before": os.getloadavg()[0],
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "timings_s": {},
    }
    T = results["timings_s"]
    T["atp"], atp = timed(lambda: atp_scores(model, batches), args.repeats)
    print("atp", T["atp"])
    T["exact"], exact = timed(lambda: exact_scores(model, batches), max(1, args.repeats - 1))
    print("exact", T["exact"])
    T["exact_no_prefix_skip"], exact_full = timed(
        lambda: exact_scores(model, batches, skip_prefix=False), 1
    )
    print("exact_no_prefix_skip", T["exact_no_prefix_skip"])
    assert torch.allclose(exact, exact_full, atol=1e-4)
    old = json.loads(OUT.read_text()) if OUT.exists() else {}
    if args.skip_tl and "tl_get_act_patch_attn_head_out_all_pos" in old.get("timings_s", {}):
        T["tl_get_act_patch_attn_head_out_all_pos"] = old["timings_s"][
            "tl_get_act_patch_attn_head_out_all_pos"
        ]
        results["max_abs_diff_exact_vs_tl"] = old.get("max_abs_diff_exact_vs_tl")
    else:
        n_all = model.cfg.n_layers * model.cfg.n_heads
        if args.tl_heads >= n_all:
            T["tl_get_act_patch_attn_head_out_all_pos"], ref = timed(
                lambda: tl_exact(model, batch), 1
            )
            ours = exact
        else:
            heads = [
                divmod(round(i * n_all / args.tl_heads), model.cfg.n_heads)
                for i in range(args.tl_heads)
            ]
            runs, ref = timed(lambda: tl_exact(model, batch, heads), 1)
            T["tl_get_act_patch_attn_head_out_all_pos"] = [
                round(r * n_all / args.tl_heads, 3) for r in runs
            ]
            results["tl_extrapolated_from_heads"] = args.tl_heads
            results["tl_measured_s"] = runs
            ours = exact[tuple(zip(*heads, strict=True))]
        print("TransformerLens", T["tl_get_act_patch_attn_head_out_all_pos"])
        diff = float((ref - ours).abs().max())
        results["max_abs_diff_exact_vs_tl"] = diff
        assert torch.allclose(ours, ref, atol=1e-4), diff
    med = {k: statistics.median(v) for k, v in T.items()}
    tl = med["tl_get_act_patch_attn_head_out_all_pos"]
    results["median_s"] = med
    results["speedup_vs_tl"] = {
        k: round(tl / v, 1) for k, v in med.items() if not k.startswith("tl_")
    }
    corr = torch.corrcoef(torch.stack([atp.flatten(), exact.flatten()]))[0, 1]
    results["pearson_atp_exact"] = round(float(corr), 4)
    results["load_avg_after"] = os.getloadavg()[0]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
