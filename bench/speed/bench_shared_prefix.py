"""Masked conditions over a prompt prefix read in place, packed, against the copied prefix.

The Cognitive Mirrors protocol's condition on the embedded SmolLM2: ``--n`` study prompts in one
batch (the study's format, ~350 tokens), the whole prompt as the prefix (``positions =
"generated"``), ``--k`` random heads scaled x 1e-4 at the generated positions, 32 new tokens and
the ``]`` stop. The same ``--conditions`` head sets are generated each way:

- ``before``: each condition alone from its own copy of the prefix, the attention weights laid
  out again on every call (the previous commit's path);
- ``copied``: the same, with the weights kept in ``F.linear``'s layout;
- ``shared_1``: each condition alone, the prefix read in place (``models.backends.shared_prefix``);
- ``shared_C``: ``C`` conditions a batch (``generate_tokens(copies=C)`` under row masks, as
  ``execution.local`` packs them on the CPU), the prefix read in place.

Every way's tokens are compared with ``before``'s, condition by condition. The prefix is built
once, before any timing. Writes bench/results/shared_prefix.json.

    .venv/bin/python -m bench.speed.bench_shared_prefix --threads 2 [--conditions 8] [--packs 2,4,8]
"""

from __future__ import annotations

import os
import time
from contextlib import ExitStack
from unittest import mock

from bench.common import ROOT, study_parser, study_setup, write_result
from interp_heads.generation import fast_attention as fa
from interp_heads.generation.decode import generate_tokens
from interp_heads.generation.prefix import PromptPrefixes
from interp_heads.interventions.kinds import get_kind
from interp_heads.interventions.masks import mask_heads
from interp_heads.interventions.row_masks import RowMasks, mask_rows
from interp_heads.interventions.selections import RandomK


def _way(name: str) -> ExitStack:
    """The patches that make ``name``'s path: the copied prefix, and the weights re-laid."""
    stack = ExitStack()
    if name in ("before", "copied"):
        stack.enter_context(mock.patch.object(fa, "fused_everywhere", lambda model: False))
    if name == "before":
        stack.enter_context(mock.patch.object(fa, "FLAT_WEIGHT_DEVICES", set()))
    return stack


def _alone(model, prompts, head_sets, gen):
    out = []
    for heads in head_sets:
        with mask_heads(model, heads, "scale", scale_factor=1e-4, positions="generated"):
            out.append(generate_tokens(model, prompts, **gen))
    return out


def _packed(model, prompts, head_sets, gen, copies):
    kind, n, out = get_kind("scale", scale_factor=1e-4), len(prompts), []
    for start in range(0, len(head_sets), copies):
        chunk = head_sets[start : start + copies]
        masks = RowMasks.build(model, [(h, kind, None, 0) for h in chunk], positions="generated")
        with mask_rows(model, masks, warn_if_idle=False) as handle:

            def on_batch(idx):
                handle.rows = [i // n for i in idx]

            rows = generate_tokens(model, prompts, copies=len(chunk), on_batch=on_batch, **gen)
        out += [rows[c * n : (c + 1) * n] for c in range(len(chunk))]
    return out


def main(argv=None) -> None:
    ap = study_parser(__doc__, "shared_prefix.json", 48, "prompts, one batch (the study's 48)")
    ap.add_argument("--conditions", type=int, default=8)
    ap.add_argument("--packs", default="2,4,8", help="conditions a batch to try")
    ap.add_argument("--k", type=int, default=32)
    args, model, prompts = study_setup(ap, argv)
    t = time.perf_counter()
    prefixes = PromptPrefixes(model, prompts, batch_size=len(prompts), whole=True)
    build_s = time.perf_counter() - t
    select = RandomK(model.cfg.n_layers, model.cfg.n_heads)
    head_sets = [select.select(args.k, seed) for seed in range(args.conditions)]
    gen = dict(max_new_tokens=32, stop_after="]", stop_at_newline=False)
    gen.update(batch_size=len(prompts), prefixes=prefixes)
    packs = [int(c) for c in args.packs.split(",") if c]
    ways = ["before", "copied", "shared_1"] + [f"shared_{c}" for c in packs]
    seconds, tokens = {}, {}
    for name in ways:
        copies = int(name.split("_")[1]) if name.startswith("shared_") else 1
        with _way(name):
            t = time.perf_counter()
            if copies == 1:
                tokens[name] = _alone(model, prompts, head_sets, gen)
            else:
                tokens[name] = _packed(model, prompts, head_sets, gen, copies)
            seconds[name] = time.perf_counter() - t
        print(name, round(seconds[name] / args.conditions, 2), "s a condition", flush=True)
    same = {
        name: sum(
            a == b
            for got, ref in zip(tokens[name], tokens["before"], strict=True)
            for a, b in zip(got, ref, strict=True)
        )
        for name in ways
    }
    rows = args.conditions * len(prompts)
    result = {
        "what": "masked conditions over a whole-prompt prefix: read in place and packed, or copied",
        "task": os.path.relpath(args.task, ROOT),
        "n_prompts": len(prompts),
        "conditions": args.conditions,
        "k": args.k,
        "threads": args.threads,
        "prefix_build_s": round(build_s, 2),
        "seconds_a_condition": {k: round(v / args.conditions, 2) for k, v in seconds.items()},
        "speed_vs_before": {k: round(seconds["before"] / v, 2) for k, v in seconds.items()},
        "rows_with_befores_tokens": {k: f"{n} of {rows}" for k, n in same.items()},
        "answer_tokens": sum(len(r) for c in tokens["before"] for r in c),
        "load_avg_1min_at_end": round(os.getloadavg()[0], 2),
    }
    write_result(args.out, result)
    print(result)


if __name__ == "__main__":
    main()
