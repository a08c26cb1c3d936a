"""The head-sets study's page (docs/head_sets.md), read from its run folders only.

:func:`rows` makes one row per task and method from each run folder's ``heads/sufficiency.csv``,
``heads/sufficiency_curves.csv``, ``attribution/<task>.json`` and manifest; :func:`page` writes the
headline table (CPR on accuracy, the all-heads Spearman against the reference beside it), the
full table (necessity area, CPR, CMD and minimal k on accuracy with their 95% intervals, CPR on
the answer's log-probability, f at the run's k, the gaps to the reference, and the ranking's
agreement with the reference), and per task whether the default ranking meets the study's targets
and whether the answer's log-probability orders the methods as accuracy does.

Agreement with the reference, from the two stored rankings alone (:func:`agreement`): the
all-heads Spearman; how many of the reference's top 16 and top 32 heads the method's top 16 and
32 hold; and the held-out Spearman, each half of the rank examples' ranking (the halves every
ranking stores, ``attribution.stability``) against the reference's ranking of the *other* half.
On the reference's own row that is its split-half agreement: the most any ranking can reach on
examples the reference did not see. It needs both rankings made on the same examples in the same
order (checked from their ``example_ids``; otherwise left blank).
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from interp_heads.attribution.stability import halves_of, spearman
from interp_heads.figures.escape import md, md_code
from interp_heads.run import Run
from interp_heads.run.manifest import Manifest
from interp_heads.studies.base import read_scores, run_minutes


def _rank_seconds(manifest: Manifest | dict, task: str, method: str) -> float:
    """The ranking's seconds over every invocation of the run (a resumed run reuses its stored
    ranking in ~0 s: the invocation that made it counts); the probe ranks every task at once."""
    for step in (f"{task}/attribution", f"{method}/attribution"):
        minutes, _ = run_minutes(manifest, step)
        if minutes is not None:
            return 60 * minutes
    return 0.0


def rows(folders: dict[str, Path], reference: str) -> tuple[list[dict], list[int], list[int]]:
    """One row per task and method of the run folders, the reference's gaps filled in; the
    kept-set grid of the runs and their ks."""
    out, grids, ks, scores = [], [], [], {}
    for path in folders.values():
        run = Run.at(path)
        manifest = Manifest.of(run.need("manifest"))
        method = manifest.config["attribution"]
        summary, curves = run.need("sufficiency"), run.need("sufficiency_curves")
        grids.append(list(manifest.sufficiency["ks"]))
        ks = list(manifest.ks)  # the same in every run of the study
        for task, split in manifest.splits.items():
            seconds = _rank_seconds(manifest, task, method)
            row = {"task": task, "method": method, "rank_seconds": round(float(seconds), 2),
                   "n_rank": len(split["rank"]), "n_eval": len(split["eval"])}  # fmt: skip
            row |= _measures(summary[summary.task == task])
            row |= _f_at(curves[curves.task == task], ks)
            out.append(row)
            scores[task, method] = read_scores(run.folder.attribution_entry(task))
    grid = grids[0] if grids else []
    for row in out:
        ref = next((r for r in out if r["task"] == row["task"] and r["method"] == reference), None)
        if ref is None:
            continue
        row |= agreement(scores[row["task"], row["method"]], scores[row["task"], reference])
        row["cpr_gap"] = _gap(row.get("accuracy_cpr"), ref.get("accuracy_cpr"))
        row["minimal_k_steps"] = _steps(row.get("minimal_k"), ref.get("minimal_k"), grid)
    return out, grid, ks


TOPS = (16, 32)  # the reference's top heads a method's top holds


def agreement(mine, ref) -> dict:
    """How a ranking agrees with the reference's (both ``HeadScores``): the all-heads Spearman,
    the shared heads of the two top 16 and top 32 (``top16``, ``top32``), and the held-out
    Spearman (:func:`held_out`)."""
    out = {"spearman": round(spearman(mine, ref), 4), "held_out": held_out(mine, ref)}
    return out | {f"top{k}": len(set(mine.top(k)) & set(ref.top(k))) for k in TOPS}


def held_out(mine, ref) -> float | None:
    """The mean of the two Spearmans of one half's ranking against the reference's other half
    (first half against second, second against first); None when either ranking stored no halves
    or the two ranked different examples."""
    if mine.provenance.get("example_ids") != ref.provenance.get("example_ids"):
        return None
    a, b = halves_of(mine), halves_of(ref)
    if a is None or b is None:
        return None
    value = (spearman(a[0], b[1]) + spearman(a[1], b[0])) / 2
    return None if math.isnan(value) else round(value, 4)


def _measures(summary: pd.DataFrame) -> dict:
    """The summary's ranking rows as flat keys (``accuracy_cpr``, ``accuracy_cpr_low`` ...)."""
    out = {}
    for r in summary[summary.curve.isin(["ranking", "necessity"])].itertuples(index=False):
        key = "minimal_k" if r.measure == "minimal_k" else f"{r.metric}_{r.measure}"
        for suffix, value in (("", r.value), ("_low", r.low), ("_high", r.high)):
            out[key + suffix] = _number(value)
    rand = summary[(summary.curve == "random") & (summary.measure == "cpr")]
    for r in rand.itertuples(index=False):
        out[f"{r.metric}_random_cpr"] = _number(r.value)
    return out


def _f_at(curves: pd.DataFrame, ks) -> dict:
    """The ranking's kept-set f at each of ``ks`` per metric (``f_accuracy_k16`` ...)."""
    c = curves[(curves.curve == "ranking") & curves.k.isin(list(ks))]
    return {f"f_{r.metric}_k{r.k}": _number(r.f) for r in c.itertuples(index=False)}


def _number(value) -> float | None:
    value = pd.to_numeric(value, errors="coerce")
    return None if value is None or math.isnan(value) else round(float(value), 4)


def _gap(a, b):
    return None if a is None or b is None else round(a - b, 4)


def _steps(k, k_ref, grid: list[int]):
    """How many grid steps ``k`` lies above ``k_ref`` (negative: below)."""
    if k is None or k_ref is None or int(k) not in grid or int(k_ref) not in grid:
        return None
    return grid.index(int(k)) - grid.index(int(k_ref))


def page(folders: dict[str, Path], reference: str, skipped: dict, minutes: float) -> str:
    """docs/head_sets.md: what was run, the headline table, every measure, the targets."""
    found, grid, ks = rows(folders, reference)
    tasks = list(dict.fromkeys(r["task"] for r in found))
    methods = list(dict.fromkeys([reference, *(r["method"] for r in found)]))
    found.sort(key=lambda r: (tasks.index(r["task"]), methods.index(r["method"])))
    data = {"rows": found, "ks": ks, "reference": reference}
    n = sorted({(r["n_rank"], r["n_eval"]) for r in found})
    sizes = ", ".join(f"{a} ranked and {b} evaluated" for a, b in n)
    lines = [
        "# Rankings judged by the head sets they find",
        "",
        "Generated by `interp-heads study head_sets` (`interp_heads/studies/head_sets/`) from "
        f"its {len(folders)} run folders ({minutes:.1f} min of runs): each method's ranking of "
        f"each task (examples per task: {sizes}), its TopK kept with every other head "
        "mean-ablated and its TopK masked at MIB's kept fractions and the run's k "
        f"(kept k = {md(', '.join(map(str, grid)))}), beside random kept sets. The reference is "
        f"{md_code(reference)}. docs/attribution.md explains the measures.",
        "",
        "**CPR on accuracy** (higher is better; in brackets the all-heads Spearman against the "
        "reference, secondary):",
        "",
        headline(data),
        "",
        "Every measure, with 95% bootstrap intervals over the evaluated examples. `ref's top 16 "
        "/ 32 held`: how many of the reference's top 16 (top 32) heads the method's top 16 (top "
        "32) holds. `held-out Spearman`: each half of the rank examples' ranking against the "
        "reference's ranking of the other half (both directions, averaged); on the reference's "
        "row it is the reference's own split-half agreement, the most a ranking can reach on "
        "examples the reference did not see (blank: a ranking without halves, or on other "
        "examples).",
        "",
        markdown(data),
    ]
    if skipped:
        lines += ["", "Not run:", ""]
        lines += [
            f"- {md_code(m)} on {md(t)}: {md(why)}" for (t, m), why in sorted(skipped.items())
        ]
    return "\n".join(lines) + "\n"


COLUMNS = {  # markdown column: (row key or keys shown as "a / b", its interval's keys, format)
    "ranking s": ("rank_seconds", None, ".0f"),
    "necessity area (acc)": ("accuracy_necessity_area", "accuracy_necessity_area", ".2f"),
    "CPR (acc)": ("accuracy_cpr", "accuracy_cpr", ".2f"),
    "CMD (acc)": ("accuracy_cmd", None, ".2f"),
    "minimal k": ("minimal_k", "minimal_k", ".0f"),
    "CPR (log-prob)": ("answer_logprob_cpr", None, ".2f"),
    "f at k (acc / log-prob)": (("f_accuracy_k{k}", "f_answer_logprob_k{k}"), None, ".2f"),
    "CPR - ref": ("cpr_gap", None, "+.2f"),
    "min k steps vs ref": ("minimal_k_steps", None, "+d"),
    "Spearman vs ref": ("spearman", None, ".2f"),
    "ref's top 16 / 32 held": (("top16", "top32"), None, ".0f"),
    "held-out Spearman": ("held_out", None, ".2f"),
}


def _fmt(value, spec: str) -> str:
    return "" if value is None else format(int(value) if spec.endswith("d") else value, spec)


def markdown(data: dict) -> str:
    """The study's table (one row per task and method) and the targets, from its JSON."""
    k = (data.get("ks") or [16])[-1]
    head = ["task", "method", *COLUMNS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in data["rows"]:
        if "skipped" in r:
            continue
        cells = [md(r["task"]), md_code(r["method"])]
        for key, ci, spec in COLUMNS.values():
            if isinstance(key, tuple):
                cells.append(" / ".join(_fmt(r.get(x.format(k=k)), spec) for x in key))
                continue
            text = _fmt(r.get(key), spec)
            low, high = (r.get(f"{ci}_low"), r.get(f"{ci}_high")) if ci else (None, None)
            if text and low is not None and high is not None:
                text += f" [{_fmt(low, spec)}, {_fmt(high, spec)}]"
            cells.append(text)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines + ["", *targets(data, k)])


def _where(gap: float, tol: float = 0.05) -> str:
    if abs(gap) <= tol:
        return f"within {tol}"
    return f"{'above' if gap > 0 else 'below'} by more than {tol}"


def targets(data: dict, k: int, method: str = "ablation_atp") -> list[str]:
    """Per task: the default ranking's CPR gap and minimal-k steps against the reference, and
    whether the log-prob f agrees with the accuracy f across the methods at ``k``."""
    out = []
    for task in dict.fromkeys(r["task"] for r in data["rows"]):
        rows = [r for r in data["rows"] if r["task"] == task and "skipped" not in r]
        mine = next((r for r in rows if r["method"] == method), None)
        if mine is None or mine.get("cpr_gap") is None:
            continue
        gap, steps, agree = mine["cpr_gap"], mine.get("minimal_k_steps"), logit_agrees(rows, k)
        out.append(
            f"- {md(task)}: {md_code(method)} CPR - reference {gap:+.2f} "
            f"({_where(gap)}); minimal k "
            f"{_fmt(steps, '+d') or 'undefined'} grid steps from the reference's "
            f"({'at most one' if steps is not None and steps <= 1 else 'more than one'}); "
            f"log-prob f vs accuracy f at k = {k} over {agree['n_methods']} methods: same sign "
            f"{agree.get('same_sign')}, same order {agree.get('same_order')} (pairs of methods "
            f"concordant {agree.get('concordant')}, discordant {agree.get('discordant')}, tied "
            f"{agree.get('tied')})"
        )
    return out


def headline(data: dict, measure: str = "accuracy_cpr") -> str:
    """Methods x tasks: the kept-set CPR on accuracy (higher is better), the reference marked,
    and the all-heads Spearman against the reference beside it (secondary)."""
    tasks = list(dict.fromkeys(r["task"] for r in data["rows"]))
    methods = list(dict.fromkeys(r["method"] for r in data["rows"] if "skipped" not in r))
    by = {(r["task"], r["method"]): r for r in data["rows"] if "skipped" not in r}
    ref = data.get("reference", "mean_ablation")
    lines = ["| method | " + " | ".join(map(md, tasks)) + " |", "|" + "---|" * (len(tasks) + 1)]
    for m in methods:
        cells = []
        for t in tasks:
            r = by.get((t, m))
            if r is None or r.get(measure) is None:
                cells.append("")
                continue
            rho = r.get("spearman")
            cells.append(f"{r[measure]:.2f}" + ("" if rho is None else f" ({rho:+.2f})"))
        name = f"{md_code(m)} (reference)" if m == ref else md_code(m)
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def logit_agrees(rows: list[dict], k: int, cheap: str = "answer_logprob") -> dict:
    """Whether the cheap logit metric's f agrees with accuracy's f at ``k`` across the methods
    of one task: the same sign (f > 0 or not) for every method, and the same order of the
    methods: no pair that one metric orders one way and the other the opposite way (a pair tied
    on either metric, as accuracy on few examples often is, is counted apart, not against)."""
    pairs = [(r[f"f_accuracy_k{k}"], r[f"f_{cheap}_k{k}"]) for r in rows
             if r.get(f"f_accuracy_k{k}") is not None and r.get(f"f_{cheap}_k{k}") is not None]  # fmt: skip
    if not pairs:
        return {"k": k, "n_methods": 0}
    same_sign = all((a > 0) == (b > 0) for a, b in pairs)
    signs = [(a1 - a2) * (b1 - b2) for i, (a1, b1) in enumerate(pairs) for a2, b2 in pairs[i + 1 :]]
    counts = {
        "concordant": sum(x > 0 for x in signs),
        "discordant": sum(x < 0 for x in signs),
        "tied": sum(x == 0 for x in signs),
    }
    return {"k": k, "n_methods": len(pairs), "same_sign": same_sign,
            "same_order": counts["discordant"] == 0, **counts}  # fmt: skip
