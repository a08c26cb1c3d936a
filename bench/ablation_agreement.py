"""Does ``ablation_atp`` estimate the sweep's own intervention? Agreement with exact mean ablation.

For each built-in task: the first ``--n`` correctly answered examples (of the first 64), each in
the task's own format. Both methods score all heads on the same scale, the drop of log p(answer's
first token) when the head's ``hook_z`` is replaced by its task mean: ``ablation_atp`` to first
order (one forward + one backward per batch), ``mean_ablation`` exactly (all heads of a layer per
forward pass, from that layer on). Reports the signed Spearman correlation over all heads (both
rank by signed score), Spearman of |score|, how many of exact's top-k heads ablation_atp's top-k
holds, and the speed-up; for ``ablation_atp`` as a pure first-order estimate (``exact_layers=0``)
and with its default exact layer-0 scores (``exact_layers=1``).

    .venv/bin/python bench/ablation_agreement.py [--n 16] [--k 32] [--tasks retrieval,...]

Writes bench/results/ablation_agreement.json and prints a markdown table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import time
from pathlib import Path

import pandas as pd

from interp_heads.attribution import HeadScores, attribute_heads, make_batches, mean_ablation_scores
from interp_heads.models import load_model
from interp_heads.tasks import filter_correct, load_task
from interp_heads.tasks.schema import BUILTIN_TASKS

OUT = Path(__file__).parent / "results" / "ablation_agreement.json"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=16, help="examples per task")
    ap.add_argument("--k", type=int, default=32)
    ap.add_argument("--tasks", default=",".join(BUILTIN_TASKS))
    ap.add_argument("--batch-size", type=int, default=8)
    args = ap.parse_args()
    model = load_model(device="cpu")
    rows = []
    for name in [t for t in args.tasks.split(",") if t]:
        task = filter_correct(model, load_task(name).subset(n=64)).subset(n=args.n)
        pure = attribute_heads(
            model, task, "ablation_atp", batch_size=args.batch_size, exact_layers=0
        )
        est = attribute_heads(model, task, "ablation_atp", batch_size=args.batch_size)
        t0 = time.perf_counter()
        batches = make_batches(
            model, task, batch_size=args.batch_size, corrupted=False, fmt=task.fmt
        )
        exact_t, _ = mean_ablation_scores(model, batches, metric="logprob")
        t_exact = time.perf_counter() - t0
        exact = HeadScores(exact_t, "mean_ablation", name, provenance={"rank_by": "signed"})
        e = pd.Series(exact.scores.flatten())
        row = {"task": name, "n": len(task)}
        for tag, s in (("first_order", pure), ("exact_layer0", est)):
            o = pd.Series(s.scores.flatten())
            row[f"{tag}_spearman"] = round(float(o.corr(e, method="spearman")), 3)
            row[f"{tag}_spearman_abs"] = round(float(o.abs().corr(e.abs(), method="spearman")), 3)
            row[f"{tag}_top{args.k}_shared"] = len(set(exact.top(args.k)) & set(s.top(args.k)))
            row[f"{tag}_s"] = s.provenance["seconds"]
            row[f"{tag}_speedup"] = round(t_exact / s.provenance["seconds"], 1)
        row["mean_ablation_s"] = round(t_exact, 2)
        rows.append(row)
        print(row, flush=True)
    result = {
        "model": "smollm2-135m",
        "k": args.k,
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "rows": rows,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    print(pd.DataFrame(rows).to_markdown(index=False))


if __name__ == "__main__":
    main()
