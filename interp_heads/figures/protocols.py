"""Two protocols' Cognitive Mirrors figures side by side (``studies.compare``, docs/compare.md).

Each protocol gets the study's figure layout: four task panels (two by two), x = number of masked
heads (log axis), the first metric (Accuracy) blue and the second (COMET or its labelled stand-in)
red in the same panel, TopK solid, RandomK dashed, LowK dotted, the unmasked score a thin line.
The two protocols' blocks stand left and right of a narrow gap, each headed by its name. Drawn
from the runs' summary tables only; intervals are in the hover text (bands for six lines per
panel would hide the lines).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from interp_heads.choices import BASELINE
from interp_heads.figures.curves import METRIC_COLORS
from interp_heads.interventions.selections import by_display
from interp_heads.tasks.schema import TASK_TITLES

# the study's figure draws these selections (table names), each in its own ``Selection.dash``
# and marker, so lines of one colour differ by more than their dash
DRAWN = ("TopK", "RandomK", "LowK")
MARKERS = {"TopK": "circle", "RandomK": "square", "LowK": "diamond"}
TITLE = "Masking TopK vs random heads: the study's protocol beside the causal one"
ROLES = ("Accuracy", "COMET")  # legend names of the first and second metric (full labels on hover)
GAP = 0.12  # width of the spacer column between the two blocks, relative to a panel


def panel_cell(protocol_index: int, task_index: int) -> tuple[int, int]:
    """``(row, col)`` of a task's panel: two by two per protocol, protocols left to right, with
    a spacer column between them."""
    return task_index // 2 + 1, protocol_index * 3 + task_index % 2 + 1


def plot_protocols(
    summaries: Mapping[str, pd.DataFrame],
    metrics: Mapping[str, Sequence[str]] | None = None,
    tasks: Sequence[str] | None = None,
    title: str | None = None,
) -> go.Figure:
    """``summaries``: ``{protocol title: summary table}`` (two; one is drawn alone).

    ``metrics[protocol]``: the (at most two) metrics drawn, Accuracy first (default: the table's
    first two). ``tasks``: four panels (default: the first protocol's first four tasks).
    """
    names = list(summaries)[:2]
    first = summaries[names[0]]
    tasks = list(tasks or dict.fromkeys(first["task"]))[:4]
    titles = []
    for r in range(2):
        for p in range(2):
            titles += [_title(tasks, r * 2 + c) if p < len(names) else "" for c in range(2)]
            titles += [""] if p == 0 else []
    fig = make_subplots(
        rows=2, cols=5, column_widths=[1, 1, GAP, 1, 1], subplot_titles=titles,
        horizontal_spacing=0.025, vertical_spacing=0.12,
    )  # fmt: skip
    shown: set[str] = set()
    for p, name in enumerate(names):
        summary = summaries[name]
        chosen = list((metrics or {}).get(name) or dict.fromkeys(summary["metric"]))[:2]
        for t, task in enumerate(tasks):
            row, col = panel_cell(p, t)
            sub = summary[summary.task == task]
            for mi, metric in enumerate(chosen):
                color = METRIC_COLORS[mi]
                for trace in _panel(sub[sub.metric == metric], ROLES[mi], color, name, task):
                    trace.showlegend = trace.name not in shown
                    shown.add(trace.name)
                    fig.add_trace(trace, row=row, col=col)
            ks = sorted(int(k) for k in sub.k.unique() if k > 0)  # this panel's k as ticks
            fig.update_xaxes(tickvals=ks, ticktext=[str(k) for k in ks], row=row, col=col)
            fig.update_xaxes(title_text="# Masked Heads" if row == 2 else None, row=row, col=col)
        fig.add_annotation(
            text=f"<b>{name}</b>", x=(0.0, 0.55)[p] + 0.225, y=1.09, xref="paper", yref="paper",
            showarrow=False, font={"size": 15},
        )  # fmt: skip
    fig.update_xaxes(type="log")
    fig.update_xaxes(visible=False, col=3)
    fig.update_yaxes(visible=False, col=3)
    fig.update_yaxes(range=[-0.03, 1.03], dtick=0.2)
    fig.update_layout(
        title={"text": TITLE if title is None else title, "x": 0.5, "xanchor": "center",
               "font": {"size": 17}},
        width=1360, height=780, template="plotly_white",
        margin={"t": 130, "l": 50, "r": 20, "b": 120},
        legend={"orientation": "h", "y": -0.12, "yanchor": "top", "x": 0.5, "xanchor": "center"},
    )  # fmt: skip
    return fig


def _title(tasks: Sequence[str], i: int) -> str:
    return TASK_TITLES.get(tasks[i], tasks[i]) if i < len(tasks) else ""


def _panel(rows: pd.DataFrame, role: str, color: str, protocol: str, task: str) -> list[go.Scatter]:
    """One metric in one panel: the unmasked line and one curve per selection of :data:`DRAWN`,
    named by the metric's ``role`` (the legend), its full label in the hover text."""
    if rows.empty:
        return []
    label = str(rows["label"].iloc[0])
    ks = sorted(int(k) for k in rows.k.unique() if k > 0)
    out = []
    base = rows[rows.selection == BASELINE]
    if len(base) and ks:
        out.append(
            go.Scatter(
                x=[ks[0], ks[-1]], y=[float(base["mean"].iloc[0])] * 2, mode="lines",
                line={"color": color, "width": 1, "dash": "longdashdot"}, opacity=0.5,
                name=f"Unmasked {role}", legendgroup=f"Unmasked {role}",
                hovertemplate=f"unmasked {label}: %{{y:.3f}}<extra>{protocol}: {task}</extra>",
            )
        )  # fmt: skip
    for sel in DRAWN:
        dash = by_display(sel).dash
        line = rows[rows.selection == sel].sort_values("k")
        if line.empty:
            continue
        name = f"{sel} {role}"
        out.append(
            go.Scatter(
                x=line.k, y=line["mean"], mode="lines+markers", name=name, legendgroup=name,
                line={"color": color, "dash": dash, "width": 2},
                marker={"size": 7, "symbol": MARKERS.get(sel, "circle")},
                customdata=line[["ci_low", "ci_high", "n_draws", "n_examples"]].to_numpy(),
                hovertemplate=(
                    f"{sel} {label}<br>k=%{{x}}<br>score=%{{y:.3f}}"
                    "<br>95% CI [%{customdata[0]:.3f}, %{customdata[1]:.3f}]"
                    "<br>draws=%{customdata[2]}, examples=%{customdata[3]}"
                    f"<extra>{protocol}: {task}</extra>"
                ),
            )
        )  # fmt: skip
    return out
