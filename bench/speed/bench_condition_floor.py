"""Where one `make demo` condition's time goes, and the floor this machine puts under it.

One masked condition of configs/seed_figure.toml per task: its evaluated examples (the correctly
answered ones after the ``n_rank`` that rank the heads, of the first ``max_examples``), in the
task's format, ``k`` random heads mean-ablated at every position, ``max_new_tokens`` with the
first-line stop, batch 32, as the demo's sweep generates them. For each task it measures the
condition's wall time, the prompt pass alone (one new token), the time torch's profiler puts in
matrix products, and counts the condition's floating-point work: every padded prompt position
and every decoded row through the model's layers, plus one unembedding per generated token.
The machine's own rate is a plain fp32 product of the model's MLP shape at the same thread count.
The floor is the work of the real (unpadded) tokens at that rate: what the condition would take
with no padding and nothing but matrix products. Writes bench/results/condition_floor.json.

    .venv/bin/python -m bench.speed.bench_condition_floor --threads 2 [--tasks retrieval]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time

import torch

from bench.common import pin_threads, result_path

DEMO = {"max_examples": 240, "n_rank": 24, "n_eval": 60, "max_new_tokens": 6, "batch_size": 32}
CONDITIONS = 49  # 8 ks x (TopK + 5 RandomK draws) + the unmasked one, per task
MATMULS = {"aten::mm", "aten::addmm", "aten::bmm", "aten::matmul"}


def peak_gflops(d_in: int, d_out: int, rows: int = 4096, repeats: int = 20) -> float:
    """GFLOP/s of a plain fp32 ``[rows, d_in] @ [d_in, d_out]`` (the machine's matmul rate)."""
    a, b = torch.randn(rows, d_in), torch.randn(d_in, d_out)
    for _ in range(3):
        a @ b
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    return 2 * rows * d_in * d_out * repeats / (time.perf_counter() - start) / 1e9


def layer_flops(cfg) -> int:
    """Multiply-adds x 2 of one token through every layer (projections and MLP)."""
    kv = getattr(cfg, "n_key_value_heads", None) or cfg.n_heads
    attn = 2 * cfg.d_model * cfg.n_heads * cfg.d_head + 2 * cfg.d_model * kv * cfg.d_head
    return 2 * cfg.n_layers * (attn + 3 * cfg.d_model * cfg.d_mlp)


def eval_prompts(model, name: str) -> list[str]:
    """The demo's evaluated prompts of ``name`` (rendered in the task's format)."""
    from interp_heads.tasks import filter_correct, load_task, resolve_format
    from interp_heads.tasks.prompts import render

    task = load_task(name).subset(n=DEMO["max_examples"])
    fmt = resolve_format(model, task)[0]
    kept = filter_correct(model, task, fmt=fmt).subset(n=DEMO["n_rank"] + DEMO["n_eval"])
    return render(model, [e.prompt for e in list(kept)[DEMO["n_rank"] :]], fmt)


def measure(model, prompts: list[str], k: int, repeats: int) -> dict:
    from torch.profiler import profile

    from interp_heads.generation.decode import batches, generate_tokens
    from interp_heads.interventions.masks import mask_heads

    cfg, bs = model.cfg, DEMO["batch_size"]
    heads = random.Random(0).sample(
        [(la, h) for la in range(cfg.n_layers) for h in range(cfg.n_heads)], k
    )
    gen = dict(batch_size=bs, stop_at_newline=True)
    with mask_heads(model, heads, "mean", values=prompts):

        def timed(n_new):
            start = time.perf_counter()
            out = generate_tokens(model, prompts, n_new, **gen)
            return time.perf_counter() - start, out

        timed(DEMO["max_new_tokens"])  # warm-up: the first-line stop's token tables, allocator
        whole = [timed(DEMO["max_new_tokens"]) for _ in range(repeats)]
        prompt_pass = [timed(1)[0] for _ in range(repeats)]
        with profile() as prof:
            generate_tokens(model, prompts, DEMO["max_new_tokens"], **gen)
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events) / 1e6
    matmul = sum(e.self_cpu_time_total for e in events if e.key in MATMULS) / 1e6
    masks = [mask for _, _, mask in batches(model, prompts, bs, None)]  # the sweep's batches
    padded, real = sum(m.numel() for m in masks), sum(int(m.sum()) for m in masks)
    # decode passes: a row's first token comes from the prompt pass, each later one (the stop
    # token included, within the budget) from one pass; rows that stopped leave the batch
    n_new = DEMO["max_new_tokens"]
    decoded = sum(min(len(r) + 1, n_new) - 1 for r in whole[0][1])
    per_token, unembed = layer_flops(cfg), 2 * cfg.d_model * cfg.d_vocab
    decoding = decoded * per_token + (decoded + len(prompts)) * unembed
    work, work_real = padded * per_token + decoding, real * per_token + decoding
    return {
        "prompts": len(prompts), "real_tokens": real, "padded_tokens": padded,
        "seconds": statistics.median(t for t, _ in whole),
        "prompt_pass_seconds": statistics.median(prompt_pass),
        "profiled_seconds": total, "matmul_seconds": matmul,
        "tflop": work / 1e12, "tflop_real_tokens": work_real / 1e12,
    }  # fmt: skip


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--tasks", nargs="+", default=["retrieval", "knowledge_recall", "math_calculation", "inference"])  # fmt: skip
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args(argv)
    pin_threads(args.threads)
    from interp_heads.models.load import load_model

    model = load_model("smollm2-135m")
    peak = statistics.median(peak_gflops(model.cfg.d_model, model.cfg.d_mlp) for _ in range(3))
    out = {"threads": args.threads, "k": args.k, "peak_gflops": peak, "tasks": {}}
    with torch.inference_mode():
        for name in args.tasks:
            row = measure(model, eval_prompts(model, name), args.k, args.repeats)
            row["matmul_gflops"] = row["tflop"] * 1e3 / row["matmul_seconds"]
            row["floor_seconds"] = row["tflop_real_tokens"] * 1e3 / peak
            out["tasks"][name] = row
            print(f"{name}: {row['seconds']:.2f} s a condition (prompt pass {row['prompt_pass_seconds']:.2f} s); "
                  f"matmuls {row['matmul_seconds']:.2f} of {row['profiled_seconds']:.2f} s profiled at "
                  f"{row['matmul_gflops']:.0f} GFLOP/s (peak {peak:.0f}); padding "
                  f"{1 - row['real_tokens'] / row['padded_tokens']:.0%} of prompt positions; floor "
                  f"{row['floor_seconds']:.2f} s", flush=True)  # fmt: skip
    sweep = sum(r["seconds"] for r in out["tasks"].values()) * CONDITIONS / 60
    floor = sum(r["floor_seconds"] for r in out["tasks"].values()) * CONDITIONS / 60
    out.update(sweep_minutes_estimate=sweep, sweep_floor_minutes=floor)
    print(f"the demo's sweep ({CONDITIONS} conditions a task): {sweep:.1f} min at these rates; "
          f"floor {floor:.1f} min")  # fmt: skip
    result_path("condition_floor.json").write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main()
