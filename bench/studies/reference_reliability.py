"""How far can a ranking of all heads be checked at all? The exact reference's own sample noise.

``bench/studies/ablation_agreement.py`` compares each estimate with exact mean ablation on the same 24
examples, over all 270 heads. This bench asks how much of that reference's order is a property
of the task and how much of those 24 examples. Per task (the same examples as there), with the
per-example exact drops (``mean_ablation_scores(..., per_example=...)``, every example ablated
with the same 24-example task mean):

- **held-out**: over 50 seeded random 12/12 splits of the examples, Spearman between a ranking
  made from one half and the exact drops of the *other* half; for exact itself this is the
  split-half agreement of the reference, the most any ranking can reach on new examples;
- **reliable heads**: the heads whose exact drop is more than 2 standard errors (over the 24
  examples) from 0, and the Spearman over those alone;
- **in-sample**: the Spearman over all heads against the 24-example reference (the measure of
  ``ablation_agreement.py``).

Estimates: ``ablation_atp`` plain first order, with layer 0 exact (the default before one rival),
and with layer 0 exact and one rival (the default). Their per-example rows are assembled from
``ablation_atp_scores`` / ``ablation_softmax_scores`` and the exact layer-0 rows, and their means
are checked against ``attribute_heads`` with the same options before anything is reported.

    .venv/bin/python -m bench.studies.reference_reliability [--tasks knowledge_recall,...]

The per-example reference is cached (``--cache``); retrieval's takes about 17 min on 2 cores,
so it is not in the default task list. Writes bench/results/reference_reliability.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from bench.common import cache_root, result_path, task_examples
from interp_heads.attribution import attribute_heads, mean_ablation_scores
from interp_heads.attribution.gradients import ablation_atp_scores
from interp_heads.attribution.softmax_atp import ablation_softmax_scores
from interp_heads.models.load import load_model

OUT = result_path("reference_reliability.json")
TASKS = ("knowledge_recall", "math_calculation", "inference", "antonyms")
# tag -> (options of attribute_heads, rivals of the assembled rows, layer 0 exact)
ESTIMATES = {
    "first order": ({"exact_layers": 0, "rivals": 0}, 0, False),
    "layer 0 exact (default before)": ({"rivals": 0}, 0, True),
    "layer 0 exact, 1 rival (default)": ({}, 1, True),
}


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    return float(pd.Series(a).corr(pd.Series(b), method="spearman"))


def exact_rows(model, batches, cache: Path) -> np.ndarray:
    """Per-example exact mean-ablation drops ``[example, layer x head]`` (cached)."""
    if not cache.exists():
        rows: list = []
        mean_ablation_scores(model, batches, objective="logprob", per_example=rows)
        cache.parent.mkdir(parents=True, exist_ok=True)
        torch.save(rows[0], cache)
    rows = torch.load(cache)
    return rows.reshape(rows.shape[0], -1).numpy()


def estimate_rows(model, task, batches, fmt, exact: np.ndarray, tag: str) -> np.ndarray:
    opts, rivals, layer0 = ESTIMATES[tag]
    rows: list = []
    if rivals:
        ablation_softmax_scores(model, batches, "mean", rivals=rivals, per_example=rows)
    else:
        ablation_atp_scores(model, batches, "mean", per_example=rows)
    est = rows[0].reshape(rows[0].shape[0], -1).numpy().copy()
    n_heads = model.cfg.n_heads
    if layer0:
        est[:, :n_heads] = exact[:, :n_heads]
    shipped = attribute_heads(model, task, "ablation_atp", fmt=fmt, batch_size=8, **opts)
    gap = float(np.abs(est.mean(0) - shipped.scores.flatten().numpy()).max())
    if gap > 1e-4:
        raise SystemExit(f"{tag}: assembled rows differ from attribute_heads by {gap:.2e}")
    return est


def measures(est: np.ndarray, exact: np.ndarray, splits) -> dict:
    ref = exact.mean(0)
    se = exact.std(0, ddof=1) / np.sqrt(len(exact))
    reliable = np.abs(ref) > 2 * se
    half = len(exact) // 2
    held = [held_out(est, exact, p, half) for p in splits]
    top = lambda v: set(np.argsort(-v)[:32])  # noqa: E731
    return {
        "in_sample": round(spearman(est.mean(0), ref), 3),
        "held_out": round(float(np.mean(held)), 3),
        "reliable_heads": int(reliable.sum()),
        "reliable_spearman": round(spearman(est.mean(0)[reliable], ref[reliable]), 3),
        "top32": len(top(est.mean(0)) & top(ref)),
    }


def held_out(est, exact, p, half) -> float:
    """A ranking from the examples of one half against the exact drops of the other."""
    return spearman(est[p[:half]].mean(0), exact[p[half:]].mean(0))


def run_task(model, name: str, args) -> list[dict]:
    task, fmt, batches, ids = task_examples(model, name, args.n)
    exact = exact_rows(model, batches, Path(args.cache) / f"{name}_{ids}.pt")
    rng = np.random.default_rng(0)
    splits = [rng.permutation(len(exact)) for _ in range(args.splits)]
    rows = [{"task": name, "n": len(exact), "ranking": "exact (reference)"}]
    rows[0] |= measures(exact, exact, splits)
    for tag in ESTIMATES:
        est = estimate_rows(model, task, batches, fmt, exact, tag)
        rows.append({"task": name, "n": len(exact), "ranking": tag} | measures(est, exact, splits))
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=24, help="examples per task")
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--splits", type=int, default=50, help="random 12/12 splits")
    ap.add_argument("--cache", default=str(cache_root() / "reference_rows"))
    args = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("BENCH_THREADS", "2")))
    model = load_model(device="cpu")
    rows = [r for name in args.tasks.split(",") if name for r in run_task(model, name, args)]
    old = json.loads(OUT.read_text())["rows"] if OUT.exists() else []
    done = {(r["task"], r["ranking"]) for r in rows}
    result = {
        "model": "smollm2-135m",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "rows": [r for r in old if (r["task"], r["ranking"]) not in done] + rows,
    }
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    print(pd.DataFrame(rows).to_markdown(index=False))


if __name__ == "__main__":
    main()
