"""Masked decode at study length against Hugging Face ``generate`` with a static cache (by hand).

The embedded SmolLM2 on both sides (HF de-quantised from the same GGUF, fp32, ``sdpa``), the
Cognitive Mirrors retrieval prompts in the study's format (about 370 tokens), one batch of
``--n`` rows, exactly ``--new-tokens`` new tokens per row (no stop on either side), greedy.
HF runs unmasked with ``cache_implementation="static"`` (a preallocated cache; no compilation on
CPU), once for ``--new-tokens`` and once for one token: the difference is its decode time at
about 370 tokens of context. This checkout decodes the same batch with ``--k`` random heads masked
(``scale`` x 1e-4 at the last position) from the shared prompt prefix (the sweep's path: the
prompt but its last token already cached, so its time is the decode plus one token's pass).
Runs are interleaved, the order rotating each repeat. Once at the end, this checkout generates
unmasked from the full prompt and its tokens are compared with HF's row by row (up to our first
EOS: HF's ``min_new_tokens`` forbids EOS before the budget). Writes bench/results/hf_static.json.

    .venv/bin/python -m bench.speed.bench_hf_static [--n 48] [--repeats 3] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import torch
import transformers

from bench.common import ROOT, pin_threads, result_path, write_result


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=48)
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--k", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    ap.add_argument("--task", default=str(ROOT / "data/cognitive_mirrors/retrieval.jsonl"))
    ap.add_argument("--out", default=str(result_path("hf_static.json")))
    args = ap.parse_args(argv)
    pin_threads(args.threads)
    torch.set_grad_enabled(False)
    from bench.speed.bench_sweep import embedded_models
    from interp_heads.generation.decode import generate_tokens, tokenize_left_padded
    from interp_heads.generation.prefix import PromptPrefixes
    from interp_heads.interventions.masks import mask_heads
    from interp_heads.interventions.selections import RandomK
    from interp_heads.tasks import load_task
    from interp_heads.tasks.prompts import render

    model, hf = embedded_models("cpu", torch.float32)
    task = load_task(args.task).subset(n=args.n)
    prompts = render(model, [e.prompt for e in task], fmt=task.fmt)
    tokens, mask = tokenize_left_padded(model, prompts)
    lengths = mask.sum(1).tolist()
    n = args.new_tokens
    gen = dict(batch_size=len(prompts), stop_at_eos=False)
    heads = RandomK(model.cfg.n_layers, model.cfg.n_heads).select(args.k, 0)
    t = time.perf_counter()
    prefixes = PromptPrefixes(model, prompts, batch_size=len(prompts))
    prefix_s = time.perf_counter() - t
    out = {}

    def hf_static(new: int):
        def run():
            ids = hf.generate(tokens, attention_mask=mask, max_new_tokens=new, min_new_tokens=new,
                              do_sample=False, pad_token_id=model.tokenizer.pad_token_id,
                              cache_implementation="static")  # fmt: skip
            out[f"hf_{new}"] = ids[:, tokens.shape[1] :].tolist()

        return run

    def masked(prefix):
        def run():
            with mask_heads(model, heads, "scale", scale_factor=1e-4, positions="last"):
                generate_tokens(model, prompts, n, prefixes=prefix, **gen)

        return run

    def unmasked():
        out["ours"] = generate_tokens(model, prompts, n, **gen)

    runs = {
        "hf_generate_static_unmasked": hf_static(n),
        "hf_generate_static_unmasked_1_token": hf_static(1),
        "ours_masked_from_prefix": masked(prefixes),
    }
    seconds = {name: [] for name in runs}
    for r in range(args.repeats):
        names = list(runs)[r % len(runs) :] + list(runs)[: r % len(runs)]
        for name in names:
            t = time.perf_counter()
            runs[name]()
            seconds[name].append(round(time.perf_counter() - t, 2))
        print(f"repeat {r}: " + ", ".join(f"{k} {seconds[k][-1]} s" for k in names), flush=True)
    t = time.perf_counter()
    unmasked()
    seconds["ours_unmasked_full_prompt"] = [round(time.perf_counter() - t, 2)]
    eos = model.tokenizer.eos_token_id
    med = {name: statistics.median(s) for name, s in seconds.items()}
    hf_decode = med["hf_generate_static_unmasked"] - med["hf_generate_static_unmasked_1_token"]
    result = {
        "what": "masked decode at study length vs HF generate with a static cache, unmasked",
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "hf_cache": "cache_implementation='static' (StaticCache), attn_implementation sdpa, fp32",
        "n_prompts": len(prompts),
        "prompt_tokens_mean": round(sum(lengths) / len(lengths), 1),
        "new_tokens": n,
        "k": args.k,
        "torch_threads": torch.get_num_threads(),  # read at the end: what every run had
        "seconds": seconds,
        "median_s": med,
        "hf_decode_s": round(hf_decode, 2),
        "masked_decode_speed_vs_hf_decode": round(hf_decode / med["ours_masked_from_prefix"], 2),
        "prefix_build_s": round(prefix_s, 2),
        "unmasked_rows_equal_to_hf_up_to_eos": equal_rows(out["ours"], out[f"hf_{n}"], eos),
        "cpu_count": os.cpu_count(),
        "load_avg_1min": round(os.getloadavg()[0], 2),
        "machine": platform.processor() or platform.machine(),
    }
    write_result(args.out, result)


def equal_rows(ours: list[list[int]], hf: list[list[int]], eos: int) -> int:
    """Rows whose tokens agree up to our first EOS (HF's ``min_new_tokens`` forbids EOS there)."""
    cut = [row.index(eos) if eos in row else len(row) for row in ours]
    return sum(a[:c] == b[:c] for a, b, c in zip(ours, hf, cut, strict=True))


if __name__ == "__main__":
    main()
