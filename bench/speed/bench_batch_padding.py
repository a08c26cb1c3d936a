"""Batches cut by a budget of padding positions (``batch_padding``) against `make demo`'s batches
of 32 prompts: greedy tokens and time per condition, interleaved in one run.

The demo's evaluated prompts of each task (``bench_condition_floor.eval_prompts``: its
``max_examples``, ``n_rank``, ``n_eval`` and formats), 6 new tokens with the first-line stop,
batch 32, as its sweep generates them: the unmasked model and ``k`` random heads mean-ablated at
every position. For each budget: every row's tokens against the batches of 32 (the proof that
the budget changes no result), the prompt positions computed (padding included), and each
condition's time, the budgets run one after the other within each repeat. Writes
bench/results/batch_padding.json.

    .venv/bin/python -m bench.speed.bench_batch_padding --threads 2 [--budgets 256 512]
"""

from __future__ import annotations

import argparse
import json
import random
import time

import torch

from bench.common import pin_threads, result_path
from bench.speed.bench_condition_floor import DEMO, eval_prompts

TASKS = ("retrieval", "knowledge_recall", "math_calculation", "inference")


def condition(model, prompts, heads, means, budget):
    """One condition's tokens and seconds (``heads`` mean-ablated at every position)."""
    from interp_heads.generation.decode import generate_tokens
    from interp_heads.interventions.masks import mask_heads

    gen = dict(batch_size=DEMO["batch_size"], stop_at_newline=True, batch_padding=budget)
    start = time.perf_counter()
    with mask_heads(model, heads, "mean", values=means):
        toks = generate_tokens(model, prompts, DEMO["max_new_tokens"], **gen)
    return toks, time.perf_counter() - start


def positions(model, prompts, budget) -> int:
    from interp_heads.generation.decode import batches

    return sum(t.numel() for _, t, _ in batches(model, prompts, DEMO["batch_size"], None, budget))


def task_rows(model, name: str, budgets: list, ks: list[int], repeats: int) -> dict:
    from interp_heads.interventions.means import head_means

    prompts = eval_prompts(model, name)
    means = head_means(model, prompts)
    cfg = model.cfg
    every = [(la, h) for la in range(cfg.n_layers) for h in range(cfg.n_heads)]
    masks = {f"k{k}": random.Random(k).sample(every, k) for k in ks} | {"unmasked": []}
    out = {
        "rows": len(prompts),
        "positions": {str(b): positions(model, prompts, b) for b in budgets},
    }
    for label, heads in masks.items():
        times = {str(b): [] for b in budgets}
        toks = {}
        for _ in range(repeats):
            for b in budgets:
                toks[str(b)], seconds = condition(model, prompts, heads, means, b)
                times[str(b)].append(seconds)
        out[label] = {
            str(b): {"same_rows": sum(a == c for a, c in zip(toks["None"], toks[str(b)],
                                                           strict=True)),
                     "s": min(times[str(b)]), "all_s": times[str(b)]}
            for b in budgets
        }  # fmt: skip
        print(name, label, out[label], flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--budgets", type=int, nargs="+", default=[256, 512])
    ap.add_argument("--ks", type=int, nargs="+", default=[16, 64])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tasks", nargs="+", default=list(TASKS))
    args = ap.parse_args()
    pin_threads(args.threads)
    torch.set_grad_enabled(False)
    from interp_heads.models.load import load_model

    model = load_model("smollm2-135m", device="cpu")
    budgets = [None, *args.budgets]
    out = {"settings": {**DEMO, "threads": args.threads, "budgets": args.budgets, "ks": args.ks,
                        "repeats": args.repeats, "torch": torch.__version__}}  # fmt: skip
    for name in args.tasks:
        out[name] = task_rows(model, name, budgets, args.ks, args.repeats)
    result_path("batch_padding.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
