"""The prompt pass of one batch in pieces of about one length, against the same batch in one
pass: seconds, and whether the conditions read from either prefix give the same tokens.

The study's case: ``--n`` prompts of the Cognitive Mirrors format (250-450 tokens) in one batch
of ``--n``, as ``configs/cognitive_mirrors.toml`` generates them (batch 48); the whole-prompt
prefix (scope ``generated``) built ``--repeats`` times each way (one pass; pieces cut by the
padding budget ``generation.decode.PREFILL_PADDING`` alone; the default, also capped at
``PREFILL_POSITIONS`` positions a piece), interleaved after one unrecorded build, and one masked
condition generated from each (the ``scale`` mask x 1e-4 on ``--k`` random heads, 32 new
tokens, the ``]`` stop). Writes bench/results/prefill_pieces.json.

    .venv/bin/python -m bench.speed.bench_prefill_pieces [--n 48] [--repeats 3] [--threads 2]
"""

from __future__ import annotations

import os
import statistics
import time
from contextlib import contextmanager
from unittest import mock

from bench.common import ROOT, study_parser, study_setup, write_result
from interp_heads.generation import decode
from interp_heads.generation.decode import batches, generate_tokens, prefill_groups
from interp_heads.generation.prefix import PromptPrefixes
from interp_heads.interventions.masks import mask_heads
from interp_heads.interventions.selections import RandomK

# name -> (PREFILL_PADDING, PREFILL_PADDING_MIN, the CPU's PREFILL_POSITIONS): one pass (the
# anchor), the padding budget alone, the default (budget and position cap)
VARIANTS = {
    "one_pass": (1.0, 10**9, None),
    "padding_budget": (decode.PREFILL_PADDING, decode.PREFILL_PADDING_MIN, None),
    "default": (
        decode.PREFILL_PADDING,
        decode.PREFILL_PADDING_MIN,
        decode.PREFILL_POSITIONS["cpu"],
    ),
}


@contextmanager
def _variant(name: str):
    fraction, least, cap = VARIANTS[name]
    positions = {} if cap is None else {"cpu": cap}
    with (
        mock.patch.object(decode, "PREFILL_PADDING", fraction),
        mock.patch.object(decode, "PREFILL_PADDING_MIN", least),
        mock.patch.object(decode, "PREFILL_POSITIONS", positions),
    ):
        yield


def _build(model, prompts, name: str):
    """The whole-prompt prefixes under one variant's pieces, timed."""
    with _variant(name):
        t = time.perf_counter()
        made = PromptPrefixes(model, prompts, batch_size=len(prompts), whole=True)
        return made, time.perf_counter() - t


def _groups(lengths, name: str, device):
    with _variant(name):
        return prefill_groups(lengths, device)


def main(argv=None) -> None:
    ap = study_parser(__doc__, "prefill_pieces.json", 48, "prompts, one batch (the study's 48)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--k", type=int, default=32)
    args, model, prompts = study_setup(ap, argv)
    ((_, _, mask),) = batches(model, prompts, len(prompts), None)
    lengths = mask.sum(1).tolist()
    names = list(VARIANTS)
    _build(model, prompts, "one_pass")  # warm-up: the first pass of a process is ~2x slower
    seconds: dict[str, list[float]] = {name: [] for name in names}
    made = {}
    for r in range(args.repeats):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            made[name], s = _build(model, prompts, name)
            seconds[name].append(round(s, 2))
    heads = RandomK(model.cfg.n_layers, model.cfg.n_heads).select(args.k, 0)
    gen = dict(max_new_tokens=32, stop_after="]", stop_at_newline=False, batch_size=len(prompts))
    tokens, condition_s = {}, {}
    with mask_heads(model, heads, "scale", scale_factor=1e-4, positions="generated"):
        for name, prefixes in made.items():
            t = time.perf_counter()
            tokens[name] = generate_tokens(model, prompts, prefixes=prefixes, **gen)
            condition_s[name] = round(time.perf_counter() - t, 2)
    same = {
        name: sum(a == b for a, b in zip(tokens[name], tokens["one_pass"], strict=True))
        for name in names[1:]
    }
    pieces = {name: _groups(lengths, name, model.cfg.device) for name in names}
    result = {
        "what": "the whole-prompt prefix of one batch: in pieces of about one length vs one pass",
        "task": os.path.relpath(args.task, ROOT),
        "n_prompts": len(prompts),
        "prompt_tokens": {"min": min(lengths), "max": max(lengths), "sum": sum(lengths)},
        "pieces": {name: [len(g) for g in gs] for name, gs in pieces.items()},
        "positions": {
            name: sum(len(g) * max(lengths[i] for i in g) for g in gs)
            for name, gs in pieces.items()
        },
        "threads": args.threads,
        "build_s": seconds,
        "median_build_s": {k: statistics.median(v) for k, v in seconds.items()},
        "masked_condition_s": condition_s,
        "rows_with_one_pass_tokens": {k: f"{n} of {len(prompts)}" for k, n in same.items()},
        "load_avg_1min_at_end": round(os.getloadavg()[0], 2),
    }
    write_result(args.out, result)
    print(result)


if __name__ == "__main__":
    main()
