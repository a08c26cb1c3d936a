"""Where does ``ablation_atp``'s first-order estimate miss? Layer-0 heads, estimate vs exact.

For each built-in task: the first ``--n`` correctly answered examples (of the first 64), the
pure first-order ``ablation_atp`` scores (``exact_layers=0``) and the exact drop of log p(answer's
first token) under mean ablation of each head in the first ``--layers`` layers (plain forward
passes, ``mean_ablation_scores(heads=...)``). Prints, per task, the layer's heads with both numbers,
the rank each would give the head among all 270, and the cost of the exact scores.

    .venv/bin/python -m bench.checks.layer0_check [--n 24] [--layers 2]

Writes bench/results/layer0_check.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import time

from bench.common import result_path
from interp_heads.attribution import attribute_heads, make_batches, mean_ablation_scores
from interp_heads.models.load import load_model
from interp_heads.tasks import filter_correct, load_task
from interp_heads.tasks.schema import BUILTIN_TASKS

OUT = result_path("layer0_check.json")


def _rank(scores, value: float) -> int:
    """1-based signed rank ``value`` would take among ``scores`` (largest first)."""
    return int((scores.flatten() > value).sum()) + 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=24, help="examples per task")
    ap.add_argument("--layers", type=int, default=2, help="score the first N layers exactly")
    ap.add_argument("--tasks", default=",".join(BUILTIN_TASKS))
    ap.add_argument("--batch-size", type=int, default=8)
    args = ap.parse_args()
    model = load_model(device="cpu")
    n_heads = model.cfg.n_heads
    rows = []
    for name in [t for t in args.tasks.split(",") if t]:
        task = filter_correct(model, load_task(name).subset(n=64)).subset(n=args.n)
        pure = attribute_heads(
            model, task, "ablation_atp", batch_size=args.batch_size, exact_layers=0, rivals=0
        )
        batches = make_batches(
            model, task, batch_size=args.batch_size, corrupted=False, fmt=task.fmt
        )
        heads = [(layer, h) for layer in range(args.layers) for h in range(n_heads)]
        t0 = time.perf_counter()
        exact, _ = mean_ablation_scores(model, batches, heads=heads, objective="logprob")
        seconds = time.perf_counter() - t0
        for layer, h in heads:
            est, ex = float(pure.scores[layer, h]), float(exact[layer, h])
            rows.append(
                {
                    "task": name,
                    "head": f"L{layer}H{h}",
                    "estimate": round(est, 4),
                    "exact": round(ex, 4),
                    "rank_estimate": _rank(pure.scores, est),
                    "rank_exact": _rank(pure.scores, ex),
                }
            )
        worst = max(
            (r for r in rows if r["task"] == name), key=lambda r: r["exact"] - r["estimate"]
        )
        print(
            f"{name}: n={len(task)} first-order {pure.provenance['seconds']:.2f} s, exact for "
            f"{len(heads)} heads {seconds:.2f} s; largest miss {worst}",
            flush=True,
        )
        rows.append(
            {
                "task": name,
                "seconds_first_order": pure.provenance["seconds"],
                "seconds_exact": round(seconds, 2),
                "n": len(task),
            }
        )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "model": "smollm2-135m",
        "layers": args.layers,
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "rows": rows,
    }
    OUT.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
