"""Which attribution estimates the sweep's own intervention? Agreement with exact mean ablation.

For each task (the four built-in ones and the user antonym task): the first ``--n`` correctly
answered examples (of the first 64), in the task's own format (the antonym task declares none: the
measured one, as the CLI picks it). The reference is the exact drop of
log p(answer's first token) when a head's ``hook_z`` is replaced by its task mean
(``mean_ablation_scores(..., objective="logprob")``), for all heads. Every method runs on the same
examples and is compared by the order it ranks the heads in (``HeadScores.rank()``, its own
direction: signed for the ablation estimates, |score| for the others; refined heads first):
Spearman correlation with the reference's signed order over all heads, how many of the reference's
top 16 / top 32 heads the method's top 16 / 32 hold, its wall time and that time as a share of the
reference's.

The reference costs about 140 full forward passes per example on SmolLM2 (21 min for 24 needle
prompts on 2 cores), so it is computed one layer at a time and cached (``--cache``); a command
stops after ``--budget-s`` seconds of reference work and is simply run again until every layer is
there (``--one-call``: in one call, for the short tasks). Its time is the sum of the calls' times,
less the repeated clean passes of per-layer calls (measured).

    .venv/bin/python -m bench.studies.ablation_agreement --n 24 --tasks inference [--budget-s 480]

Merges its rows into bench/results/ablation_agreement.json and prints a markdown table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import time
from pathlib import Path

import pandas as pd
import torch

from bench.common import cache_root, result_path, task_examples
from interp_heads.attribution import HeadScores, attribute_heads, mean_ablation_scores
from interp_heads.attribution.patching import base_names, run_cached, z_hook_names
from interp_heads.attribution.verify import verify_ranking
from interp_heads.models.load import load_model
from interp_heads.tasks.schema import BUILTIN_TASKS

OUT = result_path("ablation_agreement.json")
TASKS = (*BUILTIN_TASKS, "antonyms")
# tag -> (method, attribute_heads options); methods that need corrupted prompts are skipped without
METHODS: dict[str, tuple[str, dict]] = {
    "ablation_atp first order": ("ablation_atp", {"exact_layers": 0, "rivals": 0}),
    "ablation_atp (default: layer 0 exact, 1 rival)": ("ablation_atp", {}),
    "ablation_atp, layer 0 exact, no rivals (the default before)": ("ablation_atp", {"rivals": 0}),
    "ablation_atp, layers 0-1 exact": ("ablation_atp", {"exact_layers": 2, "rivals": 0}),
    "ablation_atp + refine 32": ("ablation_atp", {"refine": 32, "rivals": 0}),
    "ablation_atp + refine 64": ("ablation_atp", {"refine": 64, "rivals": 0}),
    "ablation_atp, 1 rival, first order": ("ablation_atp", {"rivals": 1, "exact_layers": 0}),
    "ablation_atp, 4 rivals (layer 0 exact)": ("ablation_atp", {"rivals": 4}),
    "ablation_atp, 1 rival, layers 0-1 exact": ("ablation_atp", {"rivals": 1, "exact_layers": 2}),
    "ablation_atp, lookahead 1": ("ablation_atp", {"lookahead": 1, "exact_layers": 0, "rivals": 0}),
    "ablation_atp, lookahead 2": ("ablation_atp", {"lookahead": 2, "exact_layers": 0, "rivals": 0}),
    "ablation_atp, lookahead 3": ("ablation_atp", {"lookahead": 3, "exact_layers": 0, "rivals": 0}),
    "ablation_atp, lookahead 1 (layer 0 exact)": ("ablation_atp", {"lookahead": 1, "rivals": 0}),
    "ablation_atp, lookahead 2 (layer 0 exact)": ("ablation_atp", {"lookahead": 2, "rivals": 0}),
    "ablation_atp, lookahead 1, 1 rival": (
        "ablation_atp",
        {"lookahead": 1, "rivals": 1, "exact_layers": 0},
    ),
    "ablation_atp, lookahead 2, 1 rival": (
        "ablation_atp",
        {"lookahead": 2, "rivals": 1, "exact_layers": 0},
    ),
    "ablation_atp, lookahead 2, 1 rival (layer 0 exact)": (
        "ablation_atp",
        {"lookahead": 2, "rivals": 1},
    ),
    "ablation_ig m=4": ("ablation_ig", {"steps": 4}),
    "ablation_ig m=8": ("ablation_ig", {"steps": 8}),
    "gradxact": ("gradxact", {}),
    "headmask": ("headmask", {}),
    "atp": ("atp", {}),
    "exact (clean -> corrupted patching)": ("exact", {}),
}

VERIFIED = "ablation_atp (default: layer 0 exact, 1 rival)"


def _reference(model, task, batches, cache: Path, args) -> tuple[torch.Tensor, float]:
    """Exact mean-ablation drops ``[layer, head]`` (NaN where not computed yet) and their seconds.

    ``--one-call``: all missing layers in one ``mean_ablation_scores`` call (its time is shared
    among the layers by their cost, ``n_layers - layer``). Otherwise one call per layer until
    ``--budget-s`` is spent; each such call repeats the clean pass that takes the task means,
    so the total is corrected by the measured time of that pass for every call but one.
    """
    cache.mkdir(parents=True, exist_ok=True)
    n_layers, n_heads = model.cfg.n_layers, model.cfg.n_heads
    missing = [layer for layer in range(n_layers) if not (cache / f"layer{layer:02d}.pt").exists()]
    chunks = [missing] if args.one_call and missing else [[layer] for layer in missing]
    spent = 0.0
    for chunk in chunks:
        if spent >= args.budget_s:
            break
        t0 = time.perf_counter()
        heads = [(layer, h) for layer in chunk for h in range(n_heads)]
        scores, _ = mean_ablation_scores(model, batches, heads=heads, objective="logprob")
        took = time.perf_counter() - t0
        spent += took
        weight = sum(n_layers - layer for layer in chunk)
        for layer in chunk:
            share = took * (n_layers - layer) / weight
            entry = {"scores": scores[layer], "seconds": share, "per_layer_call": len(chunk) == 1}
            torch.save(entry, cache / f"layer{layer:02d}.pt")
        print(f"{task}: reference layers {chunk[0]}-{chunk[-1]} {took:.1f} s", flush=True)
    ref, seconds, calls = torch.full((n_layers, n_heads), float("nan")), 0.0, 0
    for layer in range(n_layers):
        path = cache / f"layer{layer:02d}.pt"
        if path.exists():
            entry = torch.load(path)
            ref[layer], seconds = entry["scores"], seconds + entry["seconds"]
            calls += bool(entry["per_layer_call"])
    if calls > 1:
        t0 = time.perf_counter()
        for b in batches:
            run_cached(
                model, b.clean, b.mask, z_hook_names(model) | base_names(model, range(n_layers), 0)
            )
        seconds -= (calls - 1) * (time.perf_counter() - t0)
    return ref, seconds


def _compare(s: HeadScores, ref: HeadScores) -> dict:
    order, want = pd.Series((-s.rank()).flatten()), pd.Series((-ref.rank()).flatten())
    row = {"spearman": round(float(order.corr(want, method="spearman")), 3)}
    for k in (16, 32):
        row[f"top{k}"] = len(set(s.top(k)) & set(ref.top(k)))
    return row


def _merge(rows: list[dict], n: int) -> None:
    old = json.loads(OUT.read_text()) if OUT.exists() else {}
    new = {(r["task"], r["method"]) for r in rows}
    old_rows = old.get("rows", []) if old.get("n") == n else []  # other n: replaced
    keep = [r for r in old_rows if (r["task"], r["method"]) not in new]
    result = {
        "model": "smollm2-135m",
        "n": n,
        "reference": "exact mean ablation, drop of log p(answer's first token), all heads",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "rows": keep + rows,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=1) + "\n")


def run_task(model, name: str, args) -> list[dict]:
    """Rows for one task, or [] while its reference is incomplete."""
    task, fmt, batches, ids = task_examples(model, name, args.n, args.batch_size)
    exact, ref_s = _reference(model, name, batches, Path(args.cache) / f"{name}_{ids}", args)
    if bool(exact.isnan().any()):
        print(f"{name}: reference incomplete; run the same command again", flush=True)
        return []
    if args.reference_only:
        return []
    ref = HeadScores(exact, "mean_ablation", name, provenance={"rank_by": "signed"})
    rows = []
    for tag, (method, opts) in METHODS.items():
        if args.methods and tag not in args.methods.split(";"):
            continue
        if method in ("atp", "exact") and not task.has_corrupted:
            continue
        s = attribute_heads(model, task, method, batch_size=args.batch_size, fmt=fmt, **opts)
        row = {"task": name, "n": len(task), "method": tag, **_compare(s, ref)}
        if tag == VERIFIED:  # what verify = 8 adds to a run, and what it says
            check = verify_ranking(model, batches, s, 8)
            row |= {"verify_s": check["seconds"], "verify_verdict": check["verdict"]}
        row |= {
            "s": s.provenance["seconds"],
            "share_of_exact": round(s.provenance["seconds"] / ref_s, 3),
        }
        rows.append(row)
        print(row, flush=True)
    rows.append(
        {"task": name, "n": len(task), "method": "mean_ablation (reference)", "s": round(ref_s, 1)}
    )
    for row in rows:
        row["fmt"] = fmt
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=24, help="examples per task")
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--budget-s", type=float, default=480, help="reference seconds per command")
    ap.add_argument("--one-call", action="store_true", help="reference in one call (short tasks)")
    ap.add_argument("--methods", default="", help="only these METHODS tags, ';'-separated")
    ap.add_argument("--reference-only", action="store_true", help="only fill the reference cache")
    ap.add_argument("--cache", default=str(cache_root() / "ablation_reference"))
    args = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("BENCH_THREADS", "2")))
    model = load_model(device="cpu")
    rows = [r for name in args.tasks.split(",") if name for r in run_task(model, name, args)]
    if rows:
        _merge(rows, args.n)
        print(pd.DataFrame(rows).to_markdown(index=False))


if __name__ == "__main__":
    main()
