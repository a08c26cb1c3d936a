"""Packed conditions over one prompt prefix: the study's masked conditions through the packed
executor, against the plain path and against packing whole prompts (the packed path before it
read the prefix), with every row's answer compared with the plain path's.

The conditions are the Cognitive Mirrors protocol's as the compare study runs them on the embedded
SmolLM2: the study's prompt format (about 350 tokens), the ``]`` stop, 32 new tokens, the ``scale``
mask (x 1e-4) on ``--k`` random heads at the generated positions (the prompt's pass unmasked),
batches of ``--batch-size`` prompts. Three ways, each over all ``--conditions`` in turn, the order
rotating by repeat:

- ``plain``: one condition at a time from the whole-prompt prefix (``PlainExecutor``);
- ``packed over the prefix``: ``PackedExecutor`` with ``pack_rows`` = each of ``--conditions-a-batch``
  times the batch size (that many conditions' copies of a batch of prompts in one batch);
- ``packed whole prompts``: ``generate_packed``, every row reading its whole prompt (what the packed
  executor did for these scopes before).

Writes bench/results/packed_prefix.json.

    .venv/bin/python -m bench.speed.bench_packed_prefix [--n 48] [--conditions 4] [--threads 2]
"""

from __future__ import annotations

import os
import time

from bench.common import ROOT, study_parser, study_setup, write_result
from interp_heads.execution.base import Generation, SweepUnit, TaskContext
from interp_heads.execution.local import PlainExecutor
from interp_heads.execution.packed import PackedExecutor, PackedJob, generate_packed
from interp_heads.interventions.kinds import get_kind
from interp_heads.interventions.selections import RandomK


def _units(model, prompts, args) -> list[SweepUnit]:
    context = TaskContext("retrieval", prompts)
    generation = Generation(32, batch_size=args.batch_size, stop_at_newline=False, stop_after="]")
    kind = get_kind("scale", scale_factor=1e-4)
    pick = RandomK(model.cfg.n_layers, model.cfg.n_heads)
    return [
        SweepUnit(f"c{c}", "", context, pick.select(args.k, c), kind, generation,
                  positions="generated")
        for c in range(args.conditions)
    ]  # fmt: skip


def _whole_prompts(model, units, pack_rows) -> list[list[str]]:
    jobs = [PackedJob(u.context.prompts, u.heads) for u in units]
    return generate_packed(
        model, jobs, units[0].ablation, 32, pack_rows=pack_rows, positions="generated",
        stop_at_newline=False, stop_after="]",
    )  # fmt: skip


def main(argv=None) -> None:
    ap = study_parser(__doc__, "packed_prefix.json", 48, "prompts (the compare study evaluates 48)")
    ap.add_argument("--batch-size", type=int, default=48)
    ap.add_argument("--conditions", type=int, default=4)
    ap.add_argument("--conditions-a-batch", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--k", type=int, default=32)
    args, model, prompts = study_setup(ap, argv)
    units = _units(model, prompts, args)
    units[0].context.prefixes_for(model, units[0].generation, whole=True)  # built once, shared
    ways = {"plain": lambda: [o for g in PlainExecutor(model).run(units) for _, o, _ in g]}
    for c in args.conditions_a_batch:
        rows = c * args.batch_size
        ways[f"packed over the prefix, {c} a batch"] = lambda r=rows: [
            o for g in PackedExecutor(model, r).run(units) for _, o, _ in g
        ]
    ways["packed whole prompts"] = lambda: _whole_prompts(model, units, args.batch_size)
    seconds = {w: [] for w in ways}
    outs = {}
    names = list(ways)
    for r in range(args.repeats):
        for w in names[r % len(names) :] + names[: r % len(names)]:
            t = time.perf_counter()
            outs[w] = ways[w]()
            seconds[w].append(round(time.perf_counter() - t, 2))
    plain = outs["plain"]
    result = {
        "what": "the study's masked conditions (scope generated, scale x 1e-4): plain, packed "
        "over the prompt prefix, packed whole prompts",
        "task": os.path.relpath(args.task, ROOT),
        "n_prompts": len(prompts),
        "batch_size": args.batch_size,
        "conditions": args.conditions,
        "k": args.k,
        "threads": args.threads,
        "seconds_all_conditions": seconds,
        "best_s_per_condition": {w: round(min(s) / args.conditions, 2) for w, s in seconds.items()},
        "rows_with_plain_answers": {
            w: f"{sum(a == b for x, y in zip(o, plain, strict=True) for a, b in zip(x, y, strict=True))}"
            f" of {len(prompts) * args.conditions}"
            for w, o in outs.items()
        },
        "load_avg_1min_at_end": round(os.getloadavg()[0], 2),
    }
    write_result(args.out, result)


if __name__ == "__main__":
    main()
