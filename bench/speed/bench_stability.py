"""What split-half stability and the known-heads step cost on SmolLM2 (the demo's model).

Times each attribution method's scoring function on the rank examples of the demo's tasks with and
without the per-example collection that split-half stability reads (``per_example=[...]``),
interleaved, median of a few repeats, and checks that the scores are bitwise the same either way;
times ``known_head_scores`` (the run's known step). Writes bench/results/stability.json. By hand:

    .venv/bin/python -m bench.speed.bench_stability [--repeats 3] [--n 24] [--tasks retrieval inference]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import time

import torch

from bench.common import result_path
from interp_heads.analysis.known_heads import known_head_scores
from interp_heads.attribution import make_batches
from interp_heads.attribution.gradients import ablation_atp_scores, atp_scores
from interp_heads.attribution.patching import mean_ablation_scores
from interp_heads.models.load import load_model
from interp_heads.tasks import load_task

OUT = result_path("stability.json")


def methods(model, batches, layer0):
    """name -> fn(per_example) for the demo's ranking (ablation_atp + exact layer 0) and atp."""
    out = {
        "ablation_atp": lambda per: ablation_atp_scores(model, batches, "mean", per_example=per),
        "mean_ablation layer 0": lambda per: mean_ablation_scores(
            model, batches, heads=layer0, objective="logprob", per_example=per
        )[0],
    }
    if all(b.corrupted is not None for b in batches):
        out["atp"] = lambda per: atp_scores(model, batches, per_example=per)
    return out


def timed(fn):
    t = time.perf_counter()
    value = fn()
    return time.perf_counter() - t, value


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--n", type=int, default=24)
    ap.add_argument("--tasks", nargs="+", default=["retrieval", "inference"])
    args = ap.parse_args()
    model = load_model("smollm2-135m", device="cpu")
    layer0 = [(0, h) for h in range(model.cfg.n_heads)]
    rows = []
    for name in args.tasks:
        task = load_task(name).subset(n=args.n)
        batches = make_batches(
            model, task, batch_size=32, fmt="plain", corrupted=task.has_corrupted
        )
        for method, fn in methods(model, batches, layer0).items():
            off, on = [], []
            for _ in range(args.repeats):
                t0, plain = timed(lambda fn=fn: fn(None))
                t1, collected = timed(lambda fn=fn: fn([]))
                # bitwise, NaN where a head is not scored (the layer-0 rows) counted as equal
                same = torch.equal(plain.isnan(), collected.isnan()) and torch.equal(
                    plain.nan_to_num(), collected.nan_to_num()
                )
                assert same, f"{name} {method}: scores changed"
                off.append(t0)
                on.append(t1)
            rows.append({"task": name, "method": method, "n": len(task),
                         "seconds_without": statistics.median(off),
                         "seconds_with": statistics.median(on),
                         "ratio": statistics.median(on) / statistics.median(off)})  # fmt: skip
            print(rows[-1])
    known = [timed(lambda: known_head_scores(model))[0] for _ in range(args.repeats)]
    result = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "threads": torch.get_num_threads(),
        "repeats": args.repeats,
        "scores_bitwise_equal": True,
        "per_example_cost": rows,
        "known_step_seconds": statistics.median(known),
    }
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    print(f"known step {result['known_step_seconds']:.2f} s; wrote {OUT}")


if __name__ == "__main__":
    main()
