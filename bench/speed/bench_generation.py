"""Masked, KV-cached generation throughput against Hugging Face ``generate`` (run by hand).

Same model weights (the embedded SmolLM2, HF de-quantised from the same GGUF), same 32 prompts of
about 40 tokens, 10 new tokens, greedy, no early stop; runs are interleaved so both see the same
machine load. Reports medians and ratios and writes bench/results/generation.json.

    .venv/bin/python -m bench.speed.bench_generation [--repeats 5] [--out bench/results/generation.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import torch

from bench.common import result_path
from interp_heads.generation.decode import generate_tokens, tokenize_left_padded
from interp_heads.generation.fast_attention import fast_attention
from interp_heads.interventions.masks import mask_heads
from interp_heads.interventions.means import head_means
from interp_heads.interventions.selections import RandomK
from interp_heads.models.load import embedded_gguf_path, load_model

WORDS = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike".split()


def prompts(model, n=32, target=40):
    out = []
    for i in range(n):
        words = [WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(60)]
        text = f"Item {i}: " + " ".join(words)
        ids = model.to_tokens(text, prepend_bos=False)[0][: target - (i % 5)]
        out.append(model.tokenizer.decode(ids))
    return out


def timed(fn, repeats):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return times


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--new-tokens", type=int, default=10)
    ap.add_argument("--k", type=int, default=32)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    torch.set_grad_enabled(False)
    model = load_model("smollm2-135m", device="cpu")
    from transformers import AutoModelForCausalLM

    g = embedded_gguf_path()
    hf = AutoModelForCausalLM.from_pretrained(
        g.parent, gguf_file=g.name, dtype=torch.float32
    ).eval()
    ps = prompts(model)
    tokens, mask = tokenize_left_padded(model, ps)
    n = args.new_tokens
    heads = RandomK(model.cfg.n_layers, model.cfg.n_heads).select(args.k, 0)
    means = head_means(model, ps)

    def run_hf():
        hf.generate(
            tokens,
            attention_mask=mask,
            max_new_tokens=n,
            min_new_tokens=n,
            do_sample=False,
            pad_token_id=0,
        )

    def run_ours(fast=False):
        return generate_tokens(model, ps, n, batch_size=32, stop_at_eos=False, fast_attention=fast)

    def run_ours_masked(fast=False):
        with mask_heads(model, heads, "mean", values=means):
            return generate_tokens(
                model, ps, n, batch_size=32, stop_at_eos=False, fast_attention=fast
            )

    def run_tl():
        model.generate(
            tokens,
            max_new_tokens=n,
            do_sample=False,
            stop_at_eos=False,
            verbose=False,
            use_past_kv_cache=True,
        )

    runs = {
        "hf_generate": run_hf,
        "ours": run_ours,
        "ours_masked_mean_k": run_ours_masked,
        "ours_fast_attention": lambda: run_ours(True),
        "ours_fast_attention_masked_mean_k": lambda: run_ours_masked(True),
        "tl_generate": run_tl,
    }
    same_tokens = {
        "unmasked": run_ours(False) == run_ours(True),
        "masked": run_ours_masked(False) == run_ours_masked(True),
    }
    with fast_attention(model):
        fast_logits = model(tokens, attention_mask=mask)
    std_logits = model(tokens, attention_mask=mask)
    max_logit_diff = (fast_logits - std_logits)[mask.bool()].abs().max().item()
    for fn in runs.values():  # warm up
        fn()
    times = {name: [] for name in runs}
    for _ in range(args.repeats):
        for name, fn in runs.items():
            times[name] += timed(fn, 1)
    med = {name: statistics.median(t) for name, t in times.items()}
    result = {
        "what": f"32 prompts x ~40 tokens, {n} new tokens, greedy, CPU threads={torch.get_num_threads()}",
        "median_s": med,
        "all_s": times,
        "throughput_ratio_vs_hf": {name: med["hf_generate"] / v for name, v in med.items()},
        "masked_heads": args.k,
        "fast_attention_same_greedy_tokens": same_tokens,
        "fast_attention_max_abs_logit_diff": max_logit_diff,
        "machine": platform.platform(),
        "torch": torch.__version__,
    }
    out = Path(args.out) if args.out else result_path("generation.json")
    out.write_text(json.dumps(result, indent=1))
    for name, v in med.items():
        print(f"{name:34s} {v:6.2f} s   throughput vs HF {med['hf_generate'] / v:.2f}x")
    print(
        "fast attention: same greedy tokens", same_tokens, f"max |logit diff| {max_logit_diff:.2e}"
    )


if __name__ == "__main__":
    main()
