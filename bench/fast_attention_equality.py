"""Greedy tokens: fused attention vs TransformerLens' path on the Cognitive Mirrors figure tasks (by hand).

The first N examples of each built-in task (default 100), unmasked and with 64 random heads
mean-masked, 6 new tokens, stopping at the first line as the sweep does. Timings are single runs
(not interleaved), so only the token counts are meant to be read. Writes
bench/results/fast_attention_equality.json.

    .venv/bin/python bench/fast_attention_equality.py [N]
"""

import json
import sys
import time
from pathlib import Path

import torch

from interp_heads.generation.decode import generate_tokens
from interp_heads.interventions.masks import mask_heads
from interp_heads.interventions.means import head_means
from interp_heads.interventions.selections import RandomK
from interp_heads.models.load import load_model
from interp_heads.tasks import load_task
from interp_heads.tasks.prompts import render

torch.set_grad_enabled(False)
n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
m = load_model("smollm2-135m", device="cpu")
out = {}
for name in ["retrieval", "knowledge_recall", "math_calculation", "inference"]:
    task = load_task(name)
    ps = render(m, [e.prompt for e in list(task)[:n]], fmt=task.fmt)
    heads = RandomK(30, 9, salt=name).select(64, 0)
    means = head_means(m, ps)
    res = {}
    for label, ctx in (("unmasked", None), ("masked64", (heads, means))):
        times = {}
        toks = {}
        for fast in (False, True):
            t = time.perf_counter()
            if ctx:
                with mask_heads(m, ctx[0], "mean", values=ctx[1]):
                    toks[fast] = generate_tokens(
                        m, ps, 6, stop_at_newline=True, fast_attention=fast
                    )
            else:
                toks[fast] = generate_tokens(m, ps, 6, stop_at_newline=True, fast_attention=fast)
            times[fast] = time.perf_counter() - t
        same = sum(a == b for a, b in zip(toks[False], toks[True], strict=True))
        res[label] = {
            "rows": len(ps),
            "same_rows": same,
            "s_standard": times[False],
            "s_fast": times[True],
        }
    out[name] = res
    print(name, res, flush=True)
(Path(__file__).parent / "results" / "fast_attention_equality.json").write_text(
    json.dumps(out, indent=1)
)
