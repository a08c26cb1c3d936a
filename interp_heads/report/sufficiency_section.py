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


def summary_table(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary as one row per task, metric and measure: ranking beside random."""
    rows = []
    for (task, metric, measure), grp in summary.groupby(["task", "metric", "measure"], sort=False):
        row = {"task": task, "metric": metric, "measure": MEASURES.get(measure, measure)}
        whole = measure == "minimal_k"
        for r in grp.itertuples(index=False):
            row[r.curve] = interval_cell(r.value, r.low, r.high, ".0f" if whole else ".3f")
        rows.append(row)
    return pd.DataFrame(rows)


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
    parts.append(esc_table(summary_table(summary)))
    return parts
