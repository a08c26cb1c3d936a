"""The tables of the comparison page (``studies.compare``): the verdict, probe-vs-causal
agreement and what each of the study's choices changes.

A run here is a dict of its folder's tables: ``manifest`` (dict), ``summary`` (one row per task,
selection, k and metric), ``sig`` (``significance.csv``: TopK minus each random control, from
``interp_heads.sweep.stats.significance``) and ``ranking``. Every number is read from those; the
verdict is ``sweep.verdict``'s rule (the Holm-adjusted p of the exact test over the page's cells
decides), with the Cognitive Mirrors claim's drop ratio (at least
:data:`~interp_heads.sweep.verdict.CLAIM_RATIO` times RandomK's) shown as a secondary reading.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from interp_heads.figures.escape import num_or_blank
from interp_heads.run.manifest import Manifest
from interp_heads.sweep import stats
from interp_heads.sweep import verdict as rule
from interp_heads.sweep.verdict import CLAIM_RATIO  # noqa: F401 (the pages' wording reads it)

FIXED_K = 32  # the k every protocol is judged at beside its elbow k
CONTROL = "RandomK"
SHOWN = ("TopK", "RandomK", "LowK", "AllButTopK")  # selections given a column when present


def accuracy_metric(run: dict) -> str | None:
    """The run's accuracy metric: the first of its config's metrics it has rows for."""
    have = list(dict.fromkeys(run["summary"]["metric"]))
    asked = (Manifest.of(run["manifest"]).config or {}).get("metrics") or []
    return next((m for m in asked if m in have), have[0] if have else None)


def judged_ks(run: dict, task: str) -> list[tuple[str, int]]:
    """``[("elbow", k), ("k = 32", 32)]``: the task's elbow k (when the run has one) and 32."""
    elbow = (Manifest.of(run["manifest"]).elbow_k or {}).get(task)
    out = [("elbow", int(elbow))] if elbow is not None else []
    return out + [(f"k = {FIXED_K}", FIXED_K)]


def collapses(diff, p_holm, n_examples, n_draws, undecided=None) -> str:
    """The verdict of one cell: ``sweep.verdict.collapse`` (its one home)."""
    return rule.collapse(diff, p_holm, n_examples, n_draws, undecided=undecided)


def verdict_frame(run: dict, protocol: str) -> pd.DataFrame:
    """One row per task and judged k (:func:`judged_ks`) of the accuracy metric: the unmasked
    score, each selection's mean, TopK's and RandomK's drops, TopK minus RandomK with its 95%
    interval and p (``stats.paired_difference``), the counts and the verdict (:func:`decide`: Holm
    over this frame's rows; a page of several frames decides their concatenation again;
    "undecided: <reason>" where the metric cannot score the task's format or its unmasked score
    is below the metric's floor: ``metrics.scorable``)."""
    from interp_heads.metrics.scorable import scorable

    metric = accuracy_metric(run)
    s, sig = run["summary"], run["sig"]
    s = s[s.metric == metric]
    sig = sig[(sig.metric == metric) & (sig.control == CONTROL)] if len(sig) else sig
    rows = []
    for task in dict.fromkeys(s.task):
        for which, k in judged_ks(run, task):
            means = s[(s.task == task) & (s.k == k)].set_index("selection")["mean"]
            g = sig[(sig.task == task) & (sig.k == k)] if len(sig) else sig
            g = g.iloc[0] if len(g) else None
            base = s[(s.task == task) & (s.selection == "baseline")]["mean"]
            row = {
                "protocol": protocol, "task": task, "point": which, "k": k, "metric": metric,
                "unmasked": float(base.iloc[0]) if len(base) else np.nan,
                **{sel: float(means[sel]) if sel in means.index else np.nan for sel in SHOWN},
            }  # fmt: skip
            row.update(_sig_part(g))
            fmt = (Manifest.of(run["manifest"]).fmt or {}).get(task)  # what the metric can score
            row["undecided"] = scorable(metric, fmt, row["unmasked"]) if metric else None
            rows.append(row)
    return decide(pd.DataFrame(rows))


def decide(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame``'s ``p_holm`` over its rows (the page's family) and its ``collapses`` verdict
    (``sweep.verdict.decide``; an ``undecided`` column passes its reasons)."""
    return rule.decide(frame) if len(frame) else frame


def _sig_part(g) -> dict:
    keys = ("top_drop", "control_drop", "diff", "diff_low", "diff_high", "p_value")
    if g is None:
        return {**dict.fromkeys(keys, np.nan), "mde": np.nan, "significant": False,
                "n_examples": 0, "n_draws": 0}  # fmt: skip
    return {
        **{key: float(g[key]) for key in keys},
        "significant": bool(g["significant"]),
        "mde": float(g["mde"]) if "mde" in g else np.nan,  # tables stored before it: none
        "n_examples": int(g["n_examples"]),
        "n_draws": int(g["n_draws"]),
    }


def verdict_table(frame: pd.DataFrame) -> pd.DataFrame:
    """:func:`verdict_frame` rows (any protocols) as the page shows them; Holm's adjustment is
    over the table's rows (the page's cells), the detectable difference is the stored
    ``sweep.stats`` one (blank for runs made before it)."""
    show = [s for s in SHOWN if s in frame and frame[s].notna().any()]
    frame = frame if "p_holm" in frame or frame.empty else decide(frame)
    cal = rule.load_calibration()
    out = []
    for r in frame.itertuples(index=False):
        row = {"task": r.task, "protocol": r.protocol, "k": _k_text(r.point, r.k)}
        row["unmasked"] = num_or_blank(r.unmasked)
        row.update({sel: num_or_blank(getattr(r, sel)) for sel in show})
        row["drop ratio"] = " ".join(
            filter(
                None,
                (
                    stats.drops_text(r.top_drop, r.control_drop),
                    _paren(rule.ratio_reading(r.top_drop, r.control_drop)),
                ),
            )
        )
        row["TopK - RandomK [95% CI]"] = (
            f"{r.diff:+.2f} [{r.diff_low:+.2f}, {r.diff_high:+.2f}]" if r.diff == r.diff else ""
        )
        row["p"] = stats.format_p(r.p_value) if r.p_value == r.p_value else ""
        row["p (Holm)"] = stats.format_p(r.p_holm) if r.p_holm == r.p_holm else ""
        row["detectable (80% power)"] = num_or_blank(r.mde)
        row["n"] = f"{r.n_examples} ex, {r.n_draws} draw{'s' * (r.n_draws != 1)}"
        row["TopK collapses the task?"] = r.collapses
        row["rule's error rates"] = rule.error_rates(r.n_examples, r.n_draws, calibration=cal)
        out.append(row)
    table = pd.DataFrame(out)
    if table.empty:
        return table
    order = {t: i for i, t in enumerate(dict.fromkeys(frame.task))}  # the runs' task order
    return table.sort_values("task", key=lambda c: c.map(order), kind="stable")


def _paren(text: str) -> str:
    return f"({text})" if text else ""


def _k_text(at: str, k: int) -> str:
    return f"{k} (elbow)" if at == "elbow" else str(k)


def agreement(probe: pd.DataFrame, causal: pd.DataFrame, ks: list[int]) -> pd.DataFrame:
    """Per task: Spearman of the two rankings' ranks and the top-k overlap share at each k."""
    from scipy.stats import spearmanr

    rows = []
    for task, p in probe.groupby("task", sort=False):
        c = causal[causal.task == task].set_index("label")["rank"]
        p = p.set_index("label")["rank"]
        if c.empty:
            continue
        row = {"task": task, "Spearman": float(spearmanr(p, c.loc[p.index]).statistic)}
        top_p, top_c = p.sort_values(), c.sort_values()
        for k in ks:
            shared = set(top_p.index[:k]) & set(top_c.index[:k])
            row[f"top-{k} overlap"] = len(shared) / k
        rows.append(row)
    return pd.DataFrame(rows)


def choices_frame(verdicts: dict[str, pd.DataFrame], changed: dict[str, str]) -> pd.DataFrame:
    """One row per run: what it changes and, averaged over its tasks, the unmasked accuracy,
    TopK, RandomK and TopK minus RandomK at k = 32 and at the elbow k, and how many tasks TopK
    collapses there (``verdicts[run]``: its :func:`verdict_frame`)."""
    rows = []
    for name, v in verdicts.items():
        if v.empty:
            continue
        at32, elbow = v[v.point != "elbow"], v[v.point == "elbow"]
        rows.append({
            "run": name, "changes": changed.get(name, ""), "metric": v.metric.iloc[0],
            "unmasked": v.drop_duplicates("task").unmasked.mean(),
            "TopK @32": at32.TopK.mean(), "RandomK @32": at32.RandomK.mean(),
            "TopK - RandomK @32": at32["diff"].mean(),
            "TopK - RandomK @elbow": elbow["diff"].mean() if len(elbow) else np.nan,
            "collapsed @32": _count(at32), "collapsed @elbow": _count(elbow),
        })  # fmt: skip
    return pd.DataFrame(rows)


def _count(v: pd.DataFrame) -> str:
    if v.empty:
        return ""
    yes = int(v.collapses.map(rule.is_yes).sum())
    return f"{yes} of {v.task.nunique()}"


def md(frame: pd.DataFrame) -> str:
    """A markdown table; floats at 3 decimals, ``|`` in text escaped."""
    if frame.empty:
        return "(no rows)"
    rows = ["| " + " | ".join(map(str, frame.columns)) + " |", "|" + "---|" * len(frame.columns)]
    for r in frame.itertuples(index=False):
        rows.append("| " + " | ".join(_cell(v) for v in r) + " |")
    return "\n".join(rows)


def _cell(v) -> str:
    if isinstance(v, float):
        return "" if math.isnan(v) else f"{v:.3f}"
    return str(v).replace("|", "\\|")
