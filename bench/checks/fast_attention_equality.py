"""Greedy tokens: fused attention vs TransformerLens' path on the Cognitive Mirrors figure tasks (by hand).

The first N examples of each built-in task (default 100), unmasked and with 64 random heads
mean-masked, 6 new tokens, stopping at the first line as the sweep does. Timings are single runs
(not interleaved), so only the token counts are meant to be read. Writes
bench/results/fast_attention_equality.json.

    .venv/bin/python -m bench.checks.fast_attention_equality [N]
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from bench.common import result_path
from interp_heads.generation.decode import generate_tokens
from interp_heads.interventions.masks import mask_heads
from interp_heads.interventions.means import head_means
from interp_heads.interventions.selections import RandomK
from interp_heads.models.load import load_model
from interp_heads.tasks import load_task
from interp_heads.tasks.prompts import render

TASKS = ("retrieval", "knowledge_recall", "math_calculation", "inference")


def greedy_tokens(m, ps, fast: bool, masked):
    """Six greedy tokens per prompt, stopping at the first line, with ``masked`` = (heads, means)
    mean-masked or nothing masked."""
    if masked is None:
        return generate_tokens(m, ps, 6, stop_at_newline=True, fast_attention=fast)
    with mask_heads(m, masked[0], "mean", values=masked[1]):
        return generate_tokens(m, ps, 6, stop_at_newline=True, fast_attention=fast)


def task_rows(m, name: str, n: int) -> dict:
    """Unmasked and 64-heads-masked: rows, rows with the same tokens, seconds standard and fused."""
    task = load_task(name)
    ps = render(m, [e.prompt for e in list(task)[:n]], fmt=task.fmt)
    heads = RandomK(30, 9, salt=name).select(64, 0)
    means = head_means(m, ps)
    res = {}
    for label, masked in (("unmasked", None), ("masked64", (heads, means))):
        times, toks = {}, {}
        for fast in (False, True):
            t = time.perf_counter()
            toks[fast] = greedy_tokens(m, ps, fast, masked)
            times[fast] = time.perf_counter() - t
        same = sum(a == b for a, b in zip(toks[False], toks[True], strict=True))
        res[label] = {
            "rows": len(ps),
            "same_rows": same,
            "s_standard": times[False],
            "s_fast": times[True],
        }
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", nargs="?", type=int, default=100, help="examples per task")
    n = ap.parse_args().n
    torch.set_grad_enabled(False)
    m = load_model("smollm2-135m", device="cpu")
    out = {}
    for name in TASKS:
        out[name] = task_rows(m, name, n)
        print(name, out[name], flush=True)
    result_path("fast_attention_equality.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
