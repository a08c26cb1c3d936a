"""One zoo model scored end to end: its truth under every ablation kind, every registered
attribution method's ranking and the sufficient-set search, each against that truth.

Everything runs on the same held-out prompts (``n_prompts``): the truth is the enumeration on
them, the methods rank on them and the search searches them, so a method is judged on the
prompts its truth is defined on, not on how it generalises.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from interp_heads.errors import InputError, PipelineError
from interp_heads.heads import head_label
from interp_heads.zoo.ground import ground_truth
from interp_heads.zoo.scoring import one_minimal, score_ranking, set_faithfulness
from interp_heads.zoo.truth import KINDS, enumerate_subsets, truth_batch

SEARCH_KINDS = ("mean", "position_mean", "resample", "counterfactual")  # the search's own


def _labels(heads) -> str:
    return ",".join(head_label(*h) for h in heads)


def rankings(model, task, kinds=KINDS) -> dict[tuple[str, str], object]:
    """Every registered method's ranking, ``{(method, ablation it estimated): heads or error}``:
    a method that estimates an ablation kind ranks once per kind it takes among ``kinds``."""
    from interp_heads.attribution import attribute_heads
    from interp_heads.attribution.methods import METHODS

    out = {}
    for name in METHODS.names():
        method = METHODS.get(name)
        if method.multi_task:
            out[(name, "-")] = "ranks several tasks together, not one zoo task"
            continue
        for kind in kinds if method.kinds != "any" else ("-",):
            opts = {} if kind == "-" else {"ablation": kind}
            try:
                scores = attribute_heads(model, task, name, fmt="plain", **opts)
            except (InputError, PipelineError, ValueError) as exc:
                out[(name, kind)] = str(exc).splitlines()[0]
                continue
            out[(name, kind)] = scores.top(model.cfg.n_layers * model.cfg.n_heads)
    return out


def _ranked_with(ranks: dict, method: str, kind: str):
    """The ranking of ``method`` for the truth under ``kind``: its own for that kind, else its
    one kind-free ranking (``-``), else its ``mean`` one; and the kind it was made with."""
    for k in (kind, "-", "mean"):
        if (method, k) in ranks and not isinstance(ranks[(method, k)], str):
            return ranks[(method, k)], k
    errors = [v for (m, _), v in ranks.items() if m == method and isinstance(v, str)]
    return (errors[0] if errors else "no ranking"), None


def evaluate(zm, *, n_prompts: int = 64, kinds=KINDS, max_size: int | None = None,
             search_kwargs: dict | None = None) -> dict[str, pd.DataFrame]:  # fmt: skip
    """The tables of one zoo model (each a DataFrame, every row naming the model)."""
    from interp_heads.analysis.head_search import search_heads

    zm.require_truth()
    name, model = zm.recipe.name, zm.model
    task = zm.held_out(n_prompts)
    n_heads = model.cfg.n_heads
    start = time.perf_counter()
    enums = {k: enumerate_subsets(model, task, k, max_size=max_size) for k in kinds}
    truth_seconds = time.perf_counter() - start
    truths = {k: ground_truth(e) for k, e in enums.items()}
    start = time.perf_counter()
    ranks = rankings(model, task, kinds)
    rank_seconds = time.perf_counter() - start
    tables = {"truth": [], "heads": [], "optimal": [], "methods": [], "search": [], "subsets": []}
    for kind, t in truths.items():
        e = enums[kind]
        tables["truth"].append({
            "model": name, "kind": kind, "n_heads": e.n_total, "complete": e.complete,
            "n_prompts": e.n_prompts, "m_all": t.m_all, "m_none": t.m_none,
            "min_size": t.min_size, "n_minimum_sets": len(t.minimum),
            "minimum_sets": " | ".join(_labels(s) for s in t.minimum),
            "minimum_f": max(t.minimum_f),
            "necessary": _labels(divmod(int(i), n_heads) for i in np.flatnonzero(t.necessary)),
        })  # fmt: skip
        for i in range(e.n_total):
            tables["heads"].append({
                "model": name, "kind": kind, "head": head_label(*divmod(i, n_heads)),
                "single_damage": float(t.single_damage[i]), "in_optimal": int(t.in_optimal[i]),
                "necessary": bool(t.necessary[i]),
            })  # fmt: skip
        for k, (d, s) in enumerate(zip(t.optimal_damage, t.optimal_sets, strict=True)):
            tables["optimal"].append({"model": name, "kind": kind, "k": k, "damage": float(d),
                                      "heads": _labels(s) if s else ""})  # fmt: skip
        f = (e.values["logprob"] - t.m_none) / (t.m_all - t.m_none)
        tables["subsets"].append(pd.DataFrame({
            "model": name, "kind": kind, "mask": e.masks, "size": e.sizes, "f": f,
            **{m: v for m, v in e.values.items()},
        }))  # fmt: skip
        for method in sorted({m for m, _ in ranks}):
            ranking, used = _ranked_with(ranks, method, kind)
            row = {"model": name, "kind": kind, "method": method, "ranked_with": used or ""}
            if isinstance(ranking, str):
                tables["methods"].append({**row, "error": ranking})
                continue
            tables["methods"].append({**row, **score_ranking(e, t, ranking), "error": "",
                                      "top": _labels(ranking[: t.min_size])})  # fmt: skip
        tables["search"].append(_search_row(search_heads, model, task, kind, e, t, name,
                                            search_kwargs or {}))  # fmt: skip
    out = {k: pd.DataFrame(v) for k, v in tables.items() if k != "subsets"}
    out["subsets"] = pd.concat(tables["subsets"], ignore_index=True)
    out["model"] = pd.DataFrame([{
        "model": name, **{k: v for k, v in zm.manifest().items() if k != "recipe"},
        "task": zm.recipe.task, "n_layers": zm.recipe.n_layers, "n_heads_per_layer": n_heads,
        "truth_seconds": truth_seconds, "ranking_seconds": rank_seconds,
    }])  # fmt: skip
    return out


def _search_row(search_heads, model, task, kind, e, t, name, kwargs) -> dict:
    """The sufficient-set search under ``kind`` (its own ablations only) against the truth."""
    from interp_heads.attribution.inputs import make_batches

    row = {"model": name, "kind": kind, "true_min": t.min_size}
    if kind not in SEARCH_KINDS:
        return {**row, "error": f"the search does not ablate with {kind!r}"}
    batches = [truth_batch(model, task)] if kind == "counterfactual" else make_batches(
        model, task, batch_size=len(task), fmt="plain", corrupted=False)  # fmt: skip
    try:
        path = search_heads(model, batches, ablation=kind, **kwargs)
    except (InputError, PipelineError) as exc:
        return {**row, "error": str(exc).splitlines()[0]}
    heads = sorted(path.heads)
    return {
        **row, "found_size": len(heads), "heads_over": len(heads) - t.min_size,
        "one_minimal": one_minimal(e, heads), "f_search": path.f,
        "f_truth": set_faithfulness(e, heads), "found": _labels(heads),
        "trials": len(path.trials), "error": "",
    }  # fmt: skip
