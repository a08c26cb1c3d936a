"""The run page's section on how many heads each task needs (``sufficiency = true``).

Beside the Cognitive Mirrors figure (TopK masked: necessity) it shows the faithfulness figure (TopK kept:
sufficiency), the plain-words verdict per task ("the TopK heads that are necessary are / are
not also sufficient"), and the table of CPR, CMD, necessity area and minimal head set, all read
from ``heads/sufficiency*.csv`` (``analysis.sufficiency``).
"""

from __future__ import annotations

import math

import pandas as pd

from interp_heads.analysis.sufficiency import NECESSARY, THRESHOLD
from interp_heads.figures.escape import esc, esc_table

MEASURES = {
    "cpr": "CPR (area under f, higher is better)",
    "cmd": "CMD (area of |1 - f|, lower is better)",
    "necessity_area": "necessity area (TopK masked, lower is better)",
    "minimal_k": f"minimal k ({THRESHOLD:.0%} of unmasked accuracy)",
}


CPR_LINE = (
    "CPR (higher is better): the area under f over MIB's kept fractions of the heads (0.1% to "
    "100%); 1 would mean that keeping any share of the heads, however small, does what the whole "
    "model does."
)
CMD_LINE = (
    "CMD (lower is better): the area between f and 1 over the same fractions; 0 would mean that "
    "every kept set scores exactly as the whole model, neither below nor above."
)


def summary_table(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary as one row per task, metric and measure: ranking beside random."""
    rows = []
    for (task, metric, measure), grp in summary.groupby(["task", "metric", "measure"], sort=False):
        row = {"task": task, "metric": metric, "measure": MEASURES.get(measure, measure)}
        for r in grp.to_dict("records"):
            row[r["curve"]] = (
                minimal_cell(r) if measure == "minimal_k"
                else interval_cell(r["value"], r["low"], r["high"], ".3f")
            )  # fmt: skip
        rows.append(row)
    return pd.DataFrame(rows)


def _found(row: dict) -> bool:
    """Whether a minimal k row names a set below every head (older tables: assumed so)."""
    found = row.get("found", True)
    return True if found is None or found != found else bool(found)


def minimal_cell(row: dict) -> str:
    """A minimal k row in words: ``k [low, high]`` when a set was found, else what was tried:
    "no prefix of this ranking up to N heads reaches 90% (n examples)"."""
    value = row.get("value", row.get("minimal_k"))
    if _found(row):
        return interval_cell(value, row["low"], row["high"], ".0f")
    what = "prefix of this ranking" if row.get("curve") == "ranking" else "random kept set"
    return (
        f"no {what} up to {int(row['tested'])} heads reaches {THRESHOLD:.0%} "
        f"({int(row['n_examples'])} examples)"
    )


def plain_verdicts(summary: pd.DataFrame) -> list[str]:
    """Per task, in words: the ranking's minimal head set, and per metric its CPR and CMD beside
    those of random kept sets."""
    out = []
    for task, grp in summary.groupby("task", sort=False):
        words = []
        mins = grp[(grp.measure == "minimal_k") & (grp.curve == "ranking")].to_dict("records")
        for r in mins:
            words.append(
                f"the ranking's top {r['value']:.0f} heads kept alone reach {THRESHOLD:.0%} of "
                f"the unmasked accuracy"
                if _found(r)
                else minimal_cell(r)
            )
        for metric, m in grp[grp.measure.isin(["cpr", "cmd"])].groupby("metric", sort=False):
            cell = {(r["curve"], r["measure"]): r["value"] for r in m.to_dict("records")}
            if ("ranking", "cpr") in cell:
                rnd = cell.get(("random", "cpr"), math.nan)
                words.append(
                    f"on {metric} the ranking's kept sets have CPR {cell['ranking', 'cpr']:.2f} "
                    f"(random kept sets {rnd:.2f}) and CMD "
                    f"{cell.get(('ranking', 'cmd'), math.nan):.2f}"
                )
        out.append(f"{task}: " + "; ".join(words) + ".")
    return out


def interval_cell(value, low, high, spec: str) -> str:
    """``value [low, high]`` formatted with ``spec``: "undefined" for a missing value, no
    interval when its ends are missing."""
    if not isinstance(value, float | int) or math.isnan(value):
        return "undefined"
    interval = f" [{low:{spec}}, {high:{spec}}]" if low == low and high == high else ""
    return f"{value:{spec}}{interval}"


def sufficiency_parts(run: dict, figs: dict, div) -> list[str]:
    """The section's HTML parts (none when the run has no sufficiency tables); ``div`` draws a
    figure of ``figs`` as a ``<div>``."""
    summary, verdicts = run.get("sufficiency"), run.get("sufficiency_verdicts")
    if summary is None or summary.empty:
        return []
    parts = [
        "<h2>How many heads does each task need? (TopK kept, every other head ablated)</h2>",
        div(figs, "sufficiency") if "sufficiency" in figs else "",
        '<p class="note">Faithfulness f = (m(C) - m(empty)) / (m(N) - m(empty)) of the kept '
        "set C against the share of heads kept (MIB's fractions and the run's k): the ranking's "
        "TopK kept (solid) and k random heads kept (dashed), 95% bootstrap bands over examples "
        "(and random draws). f = 1 when every head is kept, 0 when none is.</p>",
    ]
    if verdicts is not None and len(verdicts):
        parts.append(
            f'<p class="note">Necessary: masking the TopK heads leaves f &le; {NECESSARY} of '
            f"the accuracy gap; sufficient: keeping only them reaches {THRESHOLD:.0%} of the "
            "unmasked accuracy.</p><ul>"
            + "".join(f"<li>{esc(s)}</li>" for s in verdicts.sentence)
            + "</ul>"
        )
    parts.append(
        "<ul>" + "".join(f"<li>{esc(s)}</li>" for s in plain_verdicts(summary)) + "</ul>"
        f'<p class="note">{esc(CPR_LINE)}<br>{esc(CMD_LINE)}</p>'
    )
    parts.append(esc_table(summary_table(summary)))
    searched = run.get("sufficient_sets")
    if searched is not None and len(searched):
        parts += [
            "<h3>A small sufficient set, searched (not a ranking prefix)</h3>",
            '<p class="note">On each task\'s rank examples heads are removed, cheapest first by '
            "attribution re-ranked on the kept model each step, while f on the answer's log-prob "
            "stays in the band (0.9 to 1.1 by default: above it a set over-recovers), with "
            "patience, then a 1-minimality pass; the set found is verified on the eval examples "
            "beside the named ranking's prefix of the same size and random sets of that size. It "
            "is found only when its held-out f on log-prob and KL falls in the band (else: not "
            "verified, or over-recovers).</p>",
            esc_table(searched_table(searched)),
        ]
    return parts


def _text(value) -> str:
    return value if isinstance(value, str) else ""


def searched_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per task, kept set and metric: the set's size, f [95% CI] and the mean (held out); on the
    found set's rows its held-out status, whether it is 1-minimal, the sizes the same search
    found on resampled examples, and the ranking whose prefix it is compared with."""
    from interp_heads.analysis.search_resamples import parse_sizes, size_summary

    rows = []
    for r in frame.to_dict("records"):
        heads = str(r["heads"]).split(",") if isinstance(r["heads"], str) else []
        shown = ", ".join(heads[:8]) + (f", ... ({len(heads)})" if len(heads) > 8 else "")
        found = r["set"] == "found"
        status = r.get("status") if isinstance(r.get("status"), str) else "not checked"
        minimal = r.get("one_minimal")
        rows.append({
            "task": r["task"], "ranking": _text(r.get("ranking")) if r["set"] == "ranking prefix" else "",
            "kept set": r["set"], "size": f"{int(r['k'])} of {int(r['n_total'])}",
            "metric": r["metric"], "f [95% CI]": interval_cell(r["f"], r["f_low"], r["f_high"], ".2f"),
            "mean": f"{r['mean']:.2f}", "heads": shown if found else "",
            "status (held out)": status if found else "",
            "1-minimal": ("yes" if minimal is True or minimal == 1 else "no") if found else "",
            "sizes on resampled examples": (
                size_summary(parse_sizes(r.get("sizes_resampled", ""))) if found else ""
            ),
        })  # fmt: skip
    return pd.DataFrame(rows)
