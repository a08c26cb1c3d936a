"""The faithfulness figure: f against the kept fraction of heads, one column per task and one row
per metric, the ranking's kept sets solid and random kept sets dashed, 95% bands; the unmasked
model (f = 1) as a thin grey line. Drawn from ``analysis.sufficiency.faithfulness_curves``'s
table only (it never runs a model). The kept fraction's axis is logarithmic, as MIB's fractions
(0.1% ... 100%) are spaced; the point of no kept head (f = 0 by definition) has no place on it.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from interp_heads.figures.curves import legend_below, spacing

STYLE = {"ranking": ("TopK kept (ranking)", "solid"), "random": ("random heads kept", "dash")}
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]


def _fill(hex_color: str) -> str:
    r, g, b = (int(hex_color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},0.12)"


def plot_faithfulness(
    curves: pd.DataFrame,
    tasks: Sequence[str] | None = None,
    metrics: Sequence[str] | None = None,
    title: str | None = None,
) -> go.Figure:
    """Faithfulness vs kept fraction (percent of heads), ranking solid and random dashed."""
    curves = curves[curves.curve.isin(list(STYLE)) & (curves.k > 0)]
    tasks = list(tasks or dict.fromkeys(curves["task"]))
    metrics = list(metrics or dict.fromkeys(curves["metric"]))
    labels = curves.drop_duplicates("metric").set_index("metric")["label"].to_dict()
    fig = make_subplots(
        rows=len(metrics), cols=len(tasks), subplot_titles=[*tasks, *[""] * len(tasks) * (len(metrics) - 1)],
        shared_yaxes=True, shared_xaxes=True, horizontal_spacing=spacing(len(tasks), 0.03),
        vertical_spacing=spacing(len(metrics), 0.08),
    )  # fmt: skip
    for col, task in enumerate(tasks, start=1):
        for row, metric in enumerate(metrics, start=1):
            color, label = COLORS[(row - 1) % len(COLORS)], labels.get(metric, metric)
            sub = curves[(curves.task == task) & (curves.metric == metric)]
            if len(sub):
                x = sorted(sub.fraction * 100)
                fig.add_trace(go.Scatter(
                    x=[x[0], x[-1]], y=[1, 1], mode="lines", showlegend=False, hoverinfo="skip",
                    line={"color": "rgba(120,120,120,0.5)", "width": 1},
                ), row=row, col=col)  # fmt: skip
            for curve, (name, dash) in STYLE.items():
                line = sub[sub.curve == curve].sort_values("k")
                if line.empty:
                    continue
                for trace in _traces(line, color, dash, f"{name}: {label}", task):
                    fig.add_trace(trace.update(showlegend=bool(trace.showlegend) and col == 1),
                                  row=row, col=col)  # fmt: skip
        fig.update_xaxes(title_text="% of heads kept", row=len(metrics), col=col)
    for row, metric in enumerate(metrics, start=1):
        fig.update_yaxes(
            title_text=f"faithfulness<br>({labels.get(metric, metric)})", row=row, col=1
        )
    ticks = [0.1, 1, 10, 100]  # decades only: the minor log ticks crowd a narrow panel
    fig.update_xaxes(type="log", tickvals=ticks, ticktext=[f"{t:g}" for t in ticks])
    width = max(760, 320 * len(tasks))
    fig.update_layout(
        title={"text": title, "font": {"size": 14}}, template="plotly_white", width=width,
        **legend_below(fig, width, 120 + 260 * len(metrics), top=100),
    )  # fmt: skip
    return fig


def _traces(line: pd.DataFrame, color: str, dash: str, name: str, task: str) -> list[go.Scatter]:
    """A curve's 95% band and its line, with k, f and the interval on hover."""
    x = list(line.fraction * 100)
    band = go.Scatter(
        x=x + x[::-1], y=list(line.f_high) + list(line.f_low[::-1]), fill="toself",
        mode="lines", fillcolor=_fill(color), line={"width": 0}, hoverinfo="skip",
        legendgroup=name, showlegend=False,
    )  # fmt: skip
    curve = go.Scatter(
        x=x, y=line.f, mode="lines+markers", name=name, legendgroup=name, showlegend=True,
        line={"color": color, "dash": dash, "width": 2}, marker={"size": 5},
        customdata=line[["k", "f_low", "f_high", "n_draws"]].to_numpy(),
        hovertemplate=(f"{name}<br>k=%{{customdata[0]}} (%{{x:.1f}}%)<br>f=%{{y:.3f}}"
                       " [%{customdata[1]:.3f}, %{customdata[2]:.3f}]<br>draws=%{customdata[3]}"
                       f"<extra>{task}</extra>"),
    )  # fmt: skip
    return [band, curve]
