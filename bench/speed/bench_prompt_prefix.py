"""Last-position masks from the shared unmasked prompt prefix against whole-prompt generation.

The Cognitive Mirrors protocol on the embedded SmolLM2: the study's prompt format (about 350
tokens), its ``]`` stop and 32 new tokens, the ``scale`` mask (x 1e-4) at the last position of each
forward pass (``--positions generated``: at the generated positions, the study's scope; the prefix
is then the whole prompt), ``--conditions`` random head sets of ``--k`` heads, as a sweep masks
them. Each condition is generated twice, once reading every prompt whole and once from the
prefixes built once (``generation.prefix``), interleaved so both see the same machine load; the
tokens must be equal. Writes bench/results/prompt_prefix.json (``--backend bridge``, run in the
tl4 environment: prompt_prefix_bridge.json).

    .venv/bin/python -m bench.speed.bench_prompt_prefix [--n 16] [--conditions 4] [--batch-size 16]
    .venv-tl4/bin/python -m bench.speed.bench_prompt_prefix --backend bridge --positions generated
"""

from __future__ import annotations

import argparse
import os
import time

from bench.common import STUDY_TASK, result_path, study_prompts, write_result
from interp_heads.generation.decode import generate_tokens
from interp_heads.generation.prefix import PromptPrefixes
from interp_heads.interventions.masks import mask_heads
from interp_heads.interventions.selections import RandomK


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=16, help="prompts (one batch of 16 by default)")
    ap.add_argument("--conditions", type=int, default=4)
    ap.add_argument("--k", type=int, default=32)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--task", default=str(STUDY_TASK))
    ap.add_argument("--positions", choices=["last", "generated"], default="last")
    ap.add_argument("--backend", choices=["hooked", "bridge"], default="hooked")
    ap.add_argument(
        "--out", default=None, help="default: bench/results/prompt_prefix[_bridge].json"
    )
    args = ap.parse_args(argv)
    name = "prompt_prefix.json" if args.backend == "hooked" else "prompt_prefix_bridge.json"
    args.out = args.out or str(result_path(name))
    model, prompts = study_prompts(args.task, args.n, args.backend)
    whole_prompt = args.positions == "generated"
    lengths = [len(model.to_tokens(p, prepend_bos=False)[0]) for p in prompts]
    gen = dict(max_new_tokens=32, batch_size=args.batch_size, stop_after="]", stop_at_newline=False)
    t = time.perf_counter()
    prefixes = PromptPrefixes(model, prompts, batch_size=args.batch_size, whole=whole_prompt)
    build = time.perf_counter() - t
    whole_s, shared_s, equal = [], [], []
    for seed in range(args.conditions):
        heads = RandomK(model.cfg.n_layers, model.cfg.n_heads).select(args.k, seed)
        with mask_heads(model, heads, "scale", scale_factor=1e-4, positions=args.positions):
            t = time.perf_counter()
            whole = generate_tokens(model, prompts, **gen)
            whole_s.append(time.perf_counter() - t)
            t = time.perf_counter()
            shared = generate_tokens(model, prompts, prefixes=prefixes, **gen)
            shared_s.append(time.perf_counter() - t)
        equal.append(whole == shared)
    result = {
        "what": "one condition of the Cognitive Mirrors protocol: whole prompts vs shared prefix",
        "backend": args.backend,
        "positions": args.positions,
        "prefixes_built": len(prefixes),
        "n_prompts": len(prompts),
        "prompt_tokens_mean": round(sum(lengths) / len(lengths), 1),
        "conditions": args.conditions,
        "k": args.k,
        "batch_size": args.batch_size,
        "whole_prompt_s": [round(x, 2) for x in whole_s],
        "shared_prefix_s": [round(x, 2) for x in shared_s],
        "prefix_build_s": round(build, 2),
        "speedup_per_condition": round(sum(whole_s) / sum(shared_s), 2),
        "tokens_equal": all(equal),
        "cpu_count": os.cpu_count(),
        "load_avg_1min_at_end": round(os.getloadavg()[0], 2),
    }
    write_result(args.out, result)


if __name__ == "__main__":
    main()
