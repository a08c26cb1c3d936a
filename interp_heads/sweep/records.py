"""A finished condition's payload (generations, per-example scores) and the sweep's tidy rows."""

from __future__ import annotations

import time

from interp_heads.heads import head_label


def metric_items(task, outs, free_form: bool = False) -> list:
    """One item per answer; ``unmasked`` is the example's ``meta["unmasked"]`` (the unmasked
    model's answer, ``interp_heads.sweep.unmasked``). Free-form answers are scored whole: their lines
    joined by spaces (metrics score an answer's first line)."""
    from interp_heads.metrics import MetricItem

    return [
        MetricItem(
            src=e.question or e.prompt,
            mt=" ".join(o.split()) if free_form else o,
            ref=e.answer,
            aliases=tuple(e.aliases),
            distractors=tuple(e.distractors),
            unmasked=e.meta.get("unmasked"),
        )
        for e, o in zip(task, outs, strict=True)
    ]


def condition_payload(
    task, heads, outs, metrics, cache, t_gen, t0, free_form=False, logit_scores=None
) -> dict:
    """A finished condition as the resume store holds it (``t0``: its start, for the total time;
    ``logit_scores``: the scores of its per-condition metrics, ``metrics.logits``)."""
    items = metric_items(task, outs, free_form)
    logit_scores = logit_scores or {}
    scores = {
        m.name: logit_scores[m.name] if m.name in logit_scores else cache.score(m, items)
        for m in metrics
    }
    labels = {m.name: m.label for m in metrics}
    return {
        "heads": [head_label(layer, h) for layer, h in heads],
        "generations": outs,
        "scores": scores,
        "labels": labels,
        "seconds": {"generate": t_gen, "total": time.perf_counter() - t0},
    }


def collect_records(done: dict, rows: list, gens: list) -> None:
    base = {key: done[key] for key in ("task", "selection", "seed", "k")}
    for i, ex_id in enumerate(done["ids"]):
        gens.append(
            {
                **base,
                "example_id": ex_id,
                "heads": ",".join(done["heads"]),
                "generation": done["generations"][i],
            }
        )
        for metric, values in done["scores"].items():
            rows.append(
                {
                    **base,
                    "metric": metric,
                    "label": done["labels"][metric],
                    "example_id": ex_id,
                    "value": values[i],
                }
            )
