"""How well do the cheap attributions agree with exact activation patching? (SmolLM2, all tasks)

For each built-in task (examples filtered to those the model answers correctly, when
``interp_heads.tasks.baseline.filter_correct`` is available; first ``--n`` kept), runs ``exact``,
``atp``, ``gradxact``, ``headmask`` and ``mean_ablation`` and reports, over all 270 heads, the
Spearman correlation of each method's importance (|score|) with exact's, the signed Spearman, and
how many of exact's top-k heads (k = 32) each method's top-k contains. Tasks whose data is missing
are skipped with a note; ``--synthetic`` adds the bench's name -> city retrieval task.

    .venv/bin/python -m bench.studies.attribution_agreement [--n 16] [--k 32] [--tasks retrieval,...] [--synthetic]

Writes bench/results/attribution_agreement.json and prints a markdown table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import time

import pandas as pd

from bench.common import bench_task, result_path
from interp_heads.attribution import METHODS, attribute_heads
from interp_heads.models.load import load_model
from interp_heads.tasks.schema import BUILTIN_TASKS, Task

OUT = result_path("attribution_agreement.json")
CHEAP = [m for m in METHODS if m != "exact"]


def load_tasks(
    names: list[str], model, n: int, synthetic: bool, fmt: str | None
) -> tuple[dict[str, Task], dict[str, str]]:
    tasks, notes = {}, {}
    for name in names:
        try:
            from interp_heads.tasks.io import load_task

            task = load_task(name)
        except Exception as e:  # missing data or module: skip, say why
            notes[name] = f"skipped: {e}"
            continue
        task = Task(
            task.name,
            [e for e in task if e.corrupted_prompt and e.corrupted_answer],
            task.source,
            task.sha256,
            task.meta,
        )
        try:
            from interp_heads.tasks.baseline import filter_correct

            before = len(task)
            task = filter_correct(model, task.subset(n=max(4 * n, 64)), fmt=fmt)
            notes[name] = f"{len(task)} correct of the first {min(before, max(4 * n, 64))}"
        except ImportError:
            notes[name] = "not filtered (filter_correct unavailable)"
        if len(task) == 0:
            notes[name] += "; skipped: no examples"
            continue
        tasks[name] = task.subset(n=n)
    if synthetic:
        tasks["synthetic_retrieval"] = bench_task(n, seed=1)
        notes["synthetic_retrieval"] = "bench name->city task (plain format)"
    return tasks, notes


def agreement(exact, other, k: int) -> dict:
    e, o = exact.scores.flatten().numpy(), other.scores.flatten().numpy()
    abs_rho = pd.Series(abs(o)).corr(pd.Series(abs(e)), method="spearman")
    signed_rho = pd.Series(o).corr(pd.Series(e), method="spearman")
    shared = len(set(exact.top(k)) & set(other.top(k)))
    return {
        "spearman_abs": round(float(abs_rho), 3),
        "spearman_signed": round(float(signed_rho), 3),
        f"top{k}_shared": shared,
        f"top{k}_jaccard": round(shared / (2 * k - shared), 3),
        "seconds": other.provenance["seconds"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=16, help="examples per task")
    ap.add_argument("--k", type=int, default=32)
    ap.add_argument("--tasks", default=",".join(BUILTIN_TASKS))
    ap.add_argument("--synthetic", action="store_true")
    ap.add_argument("--batch-size", type=int, default=8)
    args = ap.parse_args()
    model = load_model(device="cpu")
    tasks, notes = load_tasks(
        [t for t in args.tasks.split(",") if t], model, args.n, args.synthetic, None
    )
    rows, tops = [], {}
    for name, task in tasks.items():
        fmt = "plain" if name == "synthetic_retrieval" else None  # None: the task's own format
        t0 = time.perf_counter()
        scores = {
            m: attribute_heads(model, task, m, batch_size=args.batch_size, fmt=fmt) for m in METHODS
        }
        print(f"{name}: {len(task)} examples, {time.perf_counter() - t0:.0f} s", flush=True)
        tops[name] = {m: s.top_labels(args.k) for m, s in scores.items()}
        for m in CHEAP:
            rows.append(
                {
                    "task": name,
                    "method": m,
                    "n": len(task),
                    **agreement(scores["exact"], scores[m], args.k),
                }
            )
        rows.append(
            {
                "task": name,
                "method": "exact",
                "n": len(task),
                "seconds": scores["exact"].provenance["seconds"],
            }
        )
    frame = pd.DataFrame(rows)
    result = {
        "model": "smollm2-135m",
        "k": args.k,
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "notes": notes,
        "rows": rows,
        "top_labels": tops,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    for name, note in notes.items():
        print(f"- {name}: {note}")
    if len(frame):
        print(frame.to_markdown(index=False) if _has_tabulate() else frame.to_string(index=False))


def _has_tabulate() -> bool:
    try:
        import tabulate  # noqa: F401

        return True
    except ImportError:
        return False


if __name__ == "__main__":
    main()
