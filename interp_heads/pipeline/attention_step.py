"""The attention patterns of each task's top heads on its first prompts, stored for the page.

``attention_step`` runs while the model is at hand (``attribute``): for each task ranked by
scores, the top :data:`N_HEADS` heads' patterns on the first :data:`N_PROMPTS` rank prompts,
rendered as the model sees them (``figures.attention.attention_data``: one forward pass per
prompt). They go to ``attention.json`` so ``interp-heads report`` redraws them without the model.
A model without attention-pattern hooks is skipped with its reason in the manifest.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from interp_heads.errors import one_line

N_HEADS, N_PROMPTS = 6, 3
# the head explorer's record: every head on a few short prompts, each query's row up to its own
# key (the rest is 0: causal), 3 decimals (270 heads x 2 prompts x 16 tokens: about 0.5 MB)
EXPLORE_PROMPTS, EXPLORE_TOKENS = 2, 16


@dataclass(frozen=True)
class AttentionOutput:
    """``{task: attention_data record}`` (``attention.json``; empty when the model has no
    attention-pattern hooks)."""

    attention: dict


def attention_step(exp, inputs, record) -> AttentionOutput:
    """``{task: attention_data record}`` of every task ranked by scores, written to the folder."""
    from interp_heads.figures.attention import attention_data
    from interp_heads.store import write_atomic
    from interp_heads.tasks.prompts import render

    start, out, splits, fmts = time.perf_counter(), {}, inputs.splits, inputs.fmts
    for name, scores in inputs.rankings.items():
        if not hasattr(scores, "top"):  # an ordered list of heads (no scores to rank by)
            continue
        rank = splits[name][0] if name in splits else exp.tasks[name]
        examples = list(rank)[:N_PROMPTS] or list(exp.tasks.get(name, []))[:N_PROMPTS]
        if not examples:
            continue
        fmt = fmts.get(name) or getattr(rank, "fmt", None) or "auto"
        try:
            prompts = render(exp.model, [e.prompt for e in examples], fmt=fmt)
            data = attention_data(exp.model, prompts, scores.top(N_HEADS))
            every = [(layer, h) for layer in range(scores.n_layers) for h in range(scores.n_heads)]
            explore = attention_data(exp.model, prompts[:EXPLORE_PROMPTS], every, EXPLORE_TOKENS)
        except (ValueError, RuntimeError, AttributeError, KeyError) as exc:
            record.note(attention={"skipped": one_line(exc)})
            return AttentionOutput({})
        for rec in explore["prompts"]:  # causal: a query's row ends at its own key (i + 1)
            rec["patterns"] = {k: [[round(x, 3) for x in row[: i + 1]] for i, row in enumerate(v)]
                               for k, v in rec["patterns"].items()}  # fmt: skip
        out[name] = {**data, "example_ids": [e.id for e in examples], "method": scores.method,
                     "explore": explore}  # fmt: skip
    write_atomic(exp.folder.attention, json.dumps(out))
    record.timings["attention"] = time.perf_counter() - start
    return AttentionOutput(out)
