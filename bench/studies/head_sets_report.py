"""The head-sets study's table and targets as markdown, from ``bench/results/head_sets.json``.

    python -m bench.studies.head_sets --markdown

One row per task and method (necessity area, CPR, CMD and minimal k on accuracy with their 95%
intervals, CPR on the answer's log-probability, f at the run's k, the gaps to the reference and
the all-heads Spearman), then per task whether the default ranking meets the study's targets.
"""

from __future__ import annotations

COLUMNS = {  # markdown column: (row key, its interval's keys or None, format)
    "ranking s": ("rank_seconds", None, ".0f"),
    "necessity area (acc)": ("accuracy_necessity_area", "accuracy_necessity_area", ".2f"),
    "CPR (acc)": ("accuracy_cpr", "accuracy_cpr", ".2f"),
    "CMD (acc)": ("accuracy_cmd", None, ".2f"),
    "minimal k": ("minimal_k", "minimal_k", ".0f"),
    "CPR (log-prob)": ("answer_logprob_cpr", None, ".2f"),
    "f at k (acc / log-prob)": (None, None, ".2f"),
    "CPR - ref": ("cpr_gap", None, "+.2f"),
    "min k steps vs ref": ("minimal_k_steps", None, "+d"),
    "Spearman vs ref": ("spearman", None, ".2f"),
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
        cells = [r["task"], f"`{r['method']}`"]
        for key, ci, spec in COLUMNS.values():
            if key is None:
                acc, lp = r.get(f"f_accuracy_k{k}"), r.get(f"f_answer_logprob_k{k}")
                cells.append(f"{_fmt(acc, spec)} / {_fmt(lp, spec)}")
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
            f"- {task}: `{method}` CPR - reference {gap:+.2f} "
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
    lines = ["| method | " + " | ".join(tasks) + " |", "|" + "---|" * (len(tasks) + 1)]
    for m in methods:
        cells = []
        for t in tasks:
            r = by.get((t, m))
            if r is None or r.get(measure) is None:
                cells.append("")
                continue
            rho = r.get("spearman")
            cells.append(f"{r[measure]:.2f}" + ("" if rho is None else f" ({rho:+.2f})"))
        name = f"`{m}` (reference)" if m == ref else f"`{m}`"
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
