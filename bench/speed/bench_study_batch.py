"""The study's masked condition at several batch sizes: what a larger batch buys, and whether the
tokens stay those of ``configs/cognitive_mirrors.toml``'s batch of 16.

One condition of the Cognitive Mirrors protocol as the spec_curve and compare studies run it on the
embedded SmolLM2: the study's prompt format (about 350 tokens), the ``]`` stop, 32 new tokens, the
``scale`` mask (x 1e-4) on ``--k`` random heads at the generated positions (the prompt's pass
unmasked), each condition started from the whole-prompt prefix built once per batch size. Every
batch size generates each condition in turn, the order rotating by condition; the rows' tokens are
compared with those of ``--batch-sizes``' first. Writes bench/results/study_batch.json.

    .venv/bin/python -m bench.speed.bench_study_batch [--n 24] [--batch-sizes 16 24 48] [--threads 2]
"""

from __future__ import annotations

import os
import time

from bench.common import ROOT, study_parser, study_setup, write_result
from interp_heads.generation.decode import generate_tokens
from interp_heads.generation.prefix import PromptPrefixes
from interp_heads.interventions.masks import mask_heads
from interp_heads.interventions.selections import RandomK


def main(argv=None) -> None:
    ap = study_parser(__doc__, "study_batch.json", 24, "prompts (a spec_curve cell evaluates 24)")
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[16, 24, 48])
    ap.add_argument("--conditions", type=int, default=4)
    ap.add_argument("--k", type=int, default=32)
    args, model, prompts = study_setup(ap, argv)
    gen = dict(max_new_tokens=32, stop_after="]", stop_at_newline=False)
    sizes = args.batch_sizes
    build, prefixes = {}, {}
    for b in sizes:
        t = time.perf_counter()
        prefixes[b] = PromptPrefixes(model, prompts, batch_size=b, whole=True)
        build[b] = round(time.perf_counter() - t, 2)
    seconds = {b: [] for b in sizes}
    rows_equal = {b: 0 for b in sizes}
    for c in range(args.conditions):
        heads = RandomK(model.cfg.n_layers, model.cfg.n_heads).select(args.k, c)
        order = sizes[c % len(sizes) :] + sizes[: c % len(sizes)]
        tokens = {}
        with mask_heads(model, heads, "scale", scale_factor=1e-4, positions="generated"):
            for b in order:
                t = time.perf_counter()
                tokens[b] = generate_tokens(
                    model, prompts, batch_size=b, prefixes=prefixes[b], **gen
                )
                seconds[b].append(round(time.perf_counter() - t, 2))
        for b in sizes:
            rows_equal[b] += sum(x == y for x, y in zip(tokens[b], tokens[sizes[0]], strict=True))
    result = {
        "what": "one Cognitive Mirrors condition (scope generated, scale x 1e-4) by batch size",
        "task": os.path.relpath(args.task, ROOT),
        "n_prompts": len(prompts),
        "conditions": args.conditions,
        "k": args.k,
        "threads": args.threads,
        "prefix_build_s": build,
        "condition_s": seconds,
        "median_condition_s": {b: sorted(s)[len(s) // 2] for b, s in seconds.items()},
        "rows_with_first_size_tokens": {
            b: f"{n} of {len(prompts) * args.conditions}" for b, n in rows_equal.items()
        },
        "load_avg_1min_at_end": round(os.getloadavg()[0], 2),
    }
    write_result(args.out, result)


if __name__ == "__main__":
    main()
