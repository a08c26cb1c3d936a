"""The finding a run page opens with: one or two sentences and a verdict table, before any figure.

Everything here is read from the saved tables and the manifest, never recomputed: the TopK vs
RandomK verdict is ``sweep.stats.verdict`` of the stored ``significance.csv`` row, the stability
is ``attribution.stability.verdict`` of the manifest's split-half entry, the top heads are the
stored ranking's. Every value goes through :func:`~interp_heads.figures.escape.esc` (the report's
rules: a run folder may have been edited by hand). The section's element is ``#finding``, so a
browser test can check that it sits on the first screen.
"""

from __future__ import annotations

import pandas as pd

from interp_heads.choices import BASELINE
from interp_heads.figures.escape import esc, esc_num
from interp_heads.interventions.selections import RandomK, TopK
from interp_heads.run.manifest import Manifest
from interp_heads.sweep import stats

N_TOP = 5  # top heads named per task
FINDING_ID = "finding"
CSS = (
    ".finding{border-left:4px solid #1f77b4;background:#f6f9fc;padding:6px 12px;margin:8px 0 12px}"
    ".finding p{margin:4px 0}.finding .warn{color:#a94400}"
)


def top_heads(run: dict, task: str, n: int = N_TOP) -> list[str]:
    """The task's top ``n`` heads: its stored ranking (``attribution.parquet``), else the ranking
    an ``ablate`` run masked (the manifest's ``ranking.heads``, in rank order)."""
    attr = run.get("attribution")
    if attr is not None and len(attr) and {"task", "rank", "label"} <= set(attr.columns):
        rows = attr[attr["task"].astype(str) == task].sort_values("rank")
        if len(rows):
            return [str(x) for x in rows["label"].head(n)]
    ranking = Manifest.of(run.get("manifest")).ranking or {}
    heads = ranking.get("heads")
    return [str(h) for h in heads[:n]] if isinstance(heads, list) else []


def method_of(run: dict, task: str) -> str:
    """The ranking method of ``task`` ("" when the run has no ranking table)."""
    attr = run.get("attribution")
    if attr is None or "method" not in getattr(attr, "columns", []):
        return ""
    rows = attr[attr["task"].astype(str) == task]
    return str(rows["method"].iloc[0]) if len(rows) else ""


def stability(manifest: Manifest | dict | None, task: str, k: int | None) -> str:
    """The split-half verdict of the task's ranking at ``k`` (else the manifest's smallest k);
    "" when it was not measured."""
    from interp_heads.attribution.stability import verdict

    entry = (Manifest.of(manifest).stability or {}).get(task)
    if not isinstance(entry, dict):
        return ""
    measured = list((entry.get("jaccard") or {}).keys())
    key = str(k) if str(k) in measured else (measured[0] if measured else k)
    try:
        return verdict(entry, key if key is not None else 8)
    except (TypeError, ValueError, KeyError, AttributeError):
        return "unreadable stability entry"


def sweep_rows(run: dict) -> list[dict]:
    """Per task, the first metric at the largest k: unmasked, TopK and RandomK means with CIs and
    the stored significance row against RandomK (``None`` when absent)."""
    summary, sig = run.get("summary"), run.get("significance")
    if summary is None or not len(summary):
        return []
    rows = []
    for task in dict.fromkeys(summary["task"].astype(str)):
        sub = summary[summary["task"].astype(str) == task]
        metric = next(iter(dict.fromkeys(sub["metric"])))
        sub = sub[sub["metric"] == metric]
        masked = sub[sub["selection"] == TopK.display]
        if not len(masked):
            continue
        k = int(masked["k"].max())
        at_k = sub[sub["k"] == k]
        base = _one(sub[sub["selection"] == BASELINE])
        row = None
        if sig is not None and len(sig):
            hit = sig[(sig["task"].astype(str) == task) & (sig["metric"] == metric)
                      & (sig["k"] == k) & (sig["control"] == RandomK.display)]  # fmt: skip
            row = next(hit.itertuples(index=False), None)
        label = str(sub["label"].iloc[0]) if "label" in sub else str(metric)
        rows.append({"task": task, "metric": label, "k": k, "unmasked": base,
                     "top": _one(at_k[at_k["selection"] == TopK.display]),
                     "random": _one(at_k[at_k["selection"] == RandomK.display]), "sig": row})  # fmt: skip
    return rows


def _one(frame: pd.DataFrame):
    return next(frame.itertuples(index=False), None)


def _mean_ci(row) -> str:
    if row is None:
        return ""
    if getattr(row, "ci_low", None) is None:
        return esc_num(row.mean, ".2f")
    return (
        f"{esc_num(row.mean, '.2f')} [{esc_num(row.ci_low, '.2f')}, {esc_num(row.ci_high, '.2f')}]"
    )


def _verdict(sig) -> str:
    """``sweep.stats.verdict`` of a stored row; a row it cannot read says so."""
    if sig is None:
        return "no TopK vs RandomK comparison stored"
    try:
        return stats.verdict(sig)
    except (TypeError, ValueError, AttributeError):
        return "unreadable significance row"


def _diff(sig) -> str:
    if sig is None:
        return ""
    return f"{esc_num(sig.diff, '+.2f')} [{esc_num(sig.diff_low, '+.2f')}, {esc_num(sig.diff_high, '+.2f')}]"


def _sweep_sentence(r: dict) -> str:
    top, rnd, base = r["top"], r["random"], r["unmasked"]
    what = f"Masking the top {r['k']} heads of {esc(r['task'])}"
    if base is not None and top is not None:
        what += (f" takes {esc(r['metric'])} from {esc_num(base.mean, '.2f')} (unmasked) to "
                 f"{esc_num(top.mean, '.2f')}")  # fmt: skip
    if rnd is not None:
        what += f"; {r['k']} random heads give {esc_num(rnd.mean, '.2f')}"
    return f"{what}. Verdict: <b>{esc(_verdict(r['sig']))}</b>."


def warnings_of(run: dict, verdicts: list[str]) -> list[str]:
    """What a reader must know before trusting the table: an unfinished or failed run, too few
    examples or draws for a verdict, a ranking too unstable or too small to tell (deduplicated)."""
    manifest = Manifest.of(run.get("manifest"))
    out = []
    todo = manifest.todo()
    if todo:
        out.append(f"the run is incomplete (not run: {', '.join(map(str, todo))})")
    if manifest.status == "failed":
        error = "?" if manifest.error is None else manifest.error
        out.append(f"the run stopped with an error: {error}")
    for words in verdicts:
        if words.startswith("too few") or words.startswith("unstable") or "unreadable" in words:
            out.append(words)
    return list(dict.fromkeys(out))


def finding_html(run: dict) -> str:
    """The ``#finding`` section: sentences, a verdict table and any warning ("" with nothing to
    say: no sweep and no ranking). A table edited by hand past reading says so in the section."""
    try:
        return _finding(run)
    except (TypeError, ValueError, KeyError, AttributeError, IndexError) as exc:
        why = f"{type(exc).__name__}: {exc}"
        return (f'<section id="{FINDING_ID}" class="finding"><p class="warn">Warning: the stored '
                f"tables could not be read for a finding ({esc(why)}).</p></section>")  # fmt: skip


def _finding(run: dict) -> str:
    manifest = Manifest.of(run.get("manifest"))
    sweeps = sweep_rows(run)
    tasks = [r["task"] for r in sweeps] or _ranked_tasks(run)
    if not tasks:
        return ""
    by_task = {r["task"]: r for r in sweeps}
    sentences, table, said = [], [], []
    for task in tasks:
        r = by_task.get(task)
        heads = top_heads(run, task)
        stab = stability(manifest, task, r["k"] if r else None)
        said += [stab] + ([_verdict(r["sig"])] if r else [])
        cells = {"task": esc(task), "top heads": esc(", ".join(heads)) or "none stored"}
        if r:
            cells |= {"k": esc(r["k"]), "metric": esc(r["metric"]),
                      "unmasked": _mean_ci(r["unmasked"]), "TopK": _mean_ci(r["top"]),
                      "RandomK": _mean_ci(r["random"]), "TopK - RandomK [95% CI]": _diff(r["sig"]),
                      "verdict": f"<b>{esc(_verdict(r['sig']))}</b>"}  # fmt: skip
        else:
            method = method_of(run, task)
            cells["method"] = esc(method)
            check = ((manifest.verification or {}).get(task) or {}).get("verdict")
            if check:  # the ranking checked against exact single-head ablation
                cells["exact check of the top heads"] = esc(check)
        cells["stability (split halves)"] = esc(stab) or "not measured"
        table.append(cells)
        if r and len(sentences) < 2:
            sentences.append(_sweep_sentence(r))
        elif not r and len(sentences) < 2:
            method = method_of(run, task)
            by = f" by {esc(method)}" if method else ""
            lead = f"The top heads of {esc(task)}{by}: {esc(', '.join(heads[:3])) or 'none'}"
            if stab:
                lead += (
                    f"; the ranking is {_bold_unstable(stab)}"
                    if "stable" in stab
                    else f"; stability: {esc(stab)}"
                )
            sentences.append(lead + ".")
    if len(tasks) > 2:
        sentences.append(f"The table gives all {len(tasks)} tasks.")
    shown = " ".join(sentences)
    warns = [w for w in warnings_of(run, said) if esc(w) not in shown]  # not said twice
    parts = [f'<section id="{FINDING_ID}" class="finding">']
    parts += [f"<p>{s}</p>" for s in sentences]
    parts += [f'<p class="warn">Warning: {esc(w)}.</p>' for w in warns]
    parts.append(_table(table))
    parts.append("</section>")
    return "".join(parts)


def _bold_unstable(words: str) -> str:
    """A stability verdict, escaped, its first word in bold when it is ``unstable``."""
    text = esc(words)
    return "<b>unstable</b>" + text[len("unstable") :] if words.startswith("unstable") else text


def _ranked_tasks(run: dict) -> list[str]:
    attr = run.get("attribution")
    if attr is None or not len(attr) or "task" not in attr.columns:
        return []
    return [str(t) for t in dict.fromkeys(attr["task"].astype(str))]


def _table(rows: list[dict]) -> str:
    """Rows of already-escaped cells under their (constant) headers."""
    cols = list(dict.fromkeys(c for r in rows for c in r))
    head = "".join(f"<th>{esc(c)}</th>" for c in cols)
    body = "".join(
        "<tr>" + "".join(f"<td>{r.get(c, '')}</td>" for c in cols) + "</tr>" for r in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"
