"""Plotly figures drawn from tables only (they never run a model).

``plot_sweep`` draws the Cognitive Mirrors figure (Ma et al. 2025: score against the number of
masked heads): one column per task and one row per metric, x = number of masked heads (log2
axis), each selection in its own line style (``Selection.dash``: TopK solid, RandomK dashed,
layer-matched random and LowK dotted, the kept-set selections long-dashed, whose k counts the
heads kept rather than masked), the first metric (Accuracy) blue
and the second (COMET, or a clearly labelled offline stand-in) red, each row's y axis titled with
its metric, 95% confidence bands, the unmasked baseline as a plain grey line.
:func:`caption` words what a drawn figure shows, from its traces.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from interp_heads.choices import BASELINE
from interp_heads.interventions.selections import RandomK, TopK, by_display, display_names
from interp_heads.tasks.schema import TASK_TITLES

METRIC_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]
UNMASKED_COLOR = "#555555"  # the unmasked model's flat line: grey, plain, no markers

# a line style in words (Plotly's ``dash`` values; a custom dash list is a long-dash-dot here)
DASH_WORDS = {"solid": "solid", "dash": "dashed", "dot": "dotted", "dashdot": "dash-dotted",
              "longdash": "long-dashed", "longdashdot": "long-dash-dotted"}  # fmt: skip


def _rgba(hex_color: str, alpha: float) -> str:
    r, g, b = (int(hex_color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def spacing(n: int, wanted: float) -> float:
    """The gap between ``n`` subplots in a row or column: ``wanted``, shrunk so that many
    panels (a folder with dozens of metric names) still fit (Plotly needs it <= 1 / (n - 1))."""
    return 0.0 if n < 2 else min(wanted, 0.5 / (n - 1))


LEGEND_ENTRY_PX = 250  # a legend entry's width, roughly (line sample and label)
LEGEND_ROW_PX = 26  # one legend row's height


def legend_below(fig: go.Figure, width: int, panels_height: int, top: int) -> dict:
    """Layout keys (height, margin, legend) that put ``fig``'s horizontal legend below the
    x-axis titles, where its wrapped rows cover no title (a legend above the panels covered the
    figure's title once a narrow figure wrapped it; a fixed share of the plot height put it on
    the x-axis titles of a one-row figure): the figure and its bottom margin grow by its rows."""
    entries = sum(1 for t in fig.data if t.showlegend is not False)
    rows = max(1, math.ceil(entries * LEGEND_ENTRY_PX / width))
    bottom = 70 + LEGEND_ROW_PX * rows
    height = panels_height + LEGEND_ROW_PX * rows
    return {
        "height": height,
        "margin": {"t": top, "b": bottom},
        "legend": {"orientation": "h", "y": -62 / (height - top - bottom), "x": 0.5,
                   "xanchor": "center", "yanchor": "top"},
    }  # fmt: skip


def plot_sweep(
    summary: pd.DataFrame,
    tasks: Sequence[str] | None = None,
    metrics: Sequence[str] | None = None,
    selections: Sequence[str] | None = None,
    bands: bool = True,
    title: str | None = None,
) -> go.Figure:
    """The Cognitive Mirrors figure from ``SweepResult.summary()`` (or the saved summary table):
    one column per task, one row per metric, each row's y axis titled with its metric.

    ``selections``: the table names drawn (None: every registered selection); each is drawn in
    its selection's line style (``Selection.dash``).
    """
    selections = list(selections or display_names())
    tasks = list(tasks or dict.fromkeys(summary["task"]))
    metrics = list(metrics or dict.fromkeys(summary["metric"]))
    labels = summary.drop_duplicates("metric").set_index("metric")["label"].to_dict()
    titles = [TASK_TITLES.get(t, t) for t in tasks] + [""] * (len(tasks) * (len(metrics) - 1))
    fig = make_subplots(
        rows=len(metrics),
        cols=len(tasks),
        subplot_titles=titles,
        shared_yaxes=True,
        shared_xaxes=True,
        horizontal_spacing=spacing(len(tasks), 0.03),
        vertical_spacing=spacing(len(metrics), 0.08),
    )
    ks = sorted(k for k in summary["k"].unique() if k > 0)
    for col, task in enumerate(tasks, start=1):
        sub, first = summary[summary.task == task], col == 1
        for mi, metric in enumerate(metrics):
            row, color = mi + 1, METRIC_COLORS[mi % len(METRIC_COLORS)]
            label = labels.get(metric, metric)
            base = sub[(sub.selection == BASELINE) & (sub.metric == metric)]
            if len(base) and ks:
                trace = _unmasked_trace(base["mean"].iloc[0], ks, color, label, metric, task, first)
                fig.add_trace(trace, row=row, col=col)
            for sel in selections:
                line = sub[(sub.selection == sel) & (sub.metric == metric) & (sub.k > 0)]
                line = line.sort_values("k")  # k = 0 (a kept set of none) has no log-axis place
                if line.empty:
                    continue
                cls = by_display(sel)
                name = f"{cls.legend() if cls else sel} {label}"
                if bands:
                    fig.add_trace(_band_trace(line, color, name), row=row, col=col)
                trace = _curve_trace(line, color, cls.dash if cls else "dashdot", name, task)
                trace.meta = {"selection": sel}
                fig.add_trace(trace.update(showlegend=first), row=row, col=col)
        fig.update_xaxes(title_text=_x_title(summary, selections), row=len(metrics), col=col)
    fig.update_xaxes(type="log", tickvals=ks, ticktext=[str(k) for k in ks])
    for mi, metric in enumerate(metrics):
        fig.update_yaxes(title_text=_wrap(labels.get(metric, metric)), row=mi + 1, col=1)
        if _unit_interval(summary[summary.metric == metric]):  # a logit metric: its own range
            fig.update_yaxes(range=[-0.02, 1.02], dtick=0.2, row=mi + 1)
    width = max(420, 300 * len(tasks))
    below = legend_below(fig, width, 120 + 260 * len(metrics), top=90)
    below["margin"].update(l=70, r=20)
    fig.update_layout(
        title=title,
        width=width,
        **below,
        template="plotly_white",
    )  # fmt: skip
    return fig


def caption(fig: go.Figure) -> str:
    """What the curves of a :func:`plot_sweep` figure are, in words, from the traces it draws
    (a selection the run did not mask is not named): ``"Solid: TopK; dashed: RandomK. Bands:
    95% CI ... Grey line: the unmasked model."``."""
    styles, bands, unmasked = {}, False, False
    for trace in fig.data:
        sel = (trace.meta or {}).get("selection") if isinstance(trace.meta, dict) else None
        if trace.fill == "toself":
            bands = True
        elif sel == "unmasked":
            unmasked = True
        elif sel:
            cls = by_display(sel)
            styles.setdefault(cls.legend() if cls else sel, trace.line.dash or "solid")
    parts = [f"{DASH_WORDS.get(d, 'long-dash-dotted')}: {name}" for name, d in styles.items()]
    text = "; ".join(parts)
    text = text[:1].upper() + text[1:] + "." if text else ""
    if bands:
        text += " Bands: 95% CI (two-level bootstrap over random draws and examples)."
    if unmasked:
        text += " Grey line: the unmasked model."
    return text.strip()


def _unit_interval(rows: pd.DataFrame) -> bool:
    """Whether a metric is a score on [0, 1] (its means and intervals within [-0.5, 1.5], so a
    COMET interval a little past 1 keeps the axis) rather than a logit metric (log-probs, KL)."""
    values = rows[["mean", "ci_low", "ci_high"]].to_numpy(dtype=float)
    values = values[values == values]
    return bool(((values >= -0.5) & (values <= 1.5)).all())


def _x_title(summary: pd.DataFrame, selections: Sequence[str]) -> str:
    """The k axis' title: masked heads, and kept heads for the kept-set curves when drawn."""
    drawn = set(summary["selection"]) & set(selections)
    if any((cls := by_display(s)) is not None and cls.kept for s in drawn):
        return "# Masked Heads (kept-set curves: # Kept Heads)"
    return "# Masked Heads"


def _wrap(label: str, width: int = 24) -> str:
    """A long axis title on two lines (``<br>``) at its first space after ``width`` characters."""
    if len(label) <= width or " " not in label[width:]:
        return label
    cut = label.index(" ", width)
    return label[:cut] + "<br>" + label[cut + 1 :]


def _unmasked_trace(mean, ks, color, label, metric, task, show) -> go.Scatter:
    """The unmasked model's score as a flat line across the k axis."""
    return go.Scatter(
        x=[ks[0], ks[-1]],
        y=[mean] * 2,
        mode="lines",
        line={"color": UNMASKED_COLOR, "width": 1.5, "dash": "solid"},  # seen at a glance
        name=f"Unmasked {label}",
        meta={"selection": "unmasked"},
        legendgroup=f"base-{metric}",
        showlegend=show,
        hovertemplate=f"unmasked {label}: %{{y:.3f}}<extra>{task}</extra>",
    )


def _band_trace(line, color, name) -> go.Scatter:
    """A selection's 95% CI band, filled between ``ci_low`` and ``ci_high``."""
    return go.Scatter(
        x=list(line.k) + list(line.k[::-1]),
        y=list(line.ci_high) + list(line.ci_low[::-1]),
        fill="toself",
        mode="lines",  # no marker dots at the band's corners
        fillcolor=_rgba(color, 0.12),
        line={"width": 0},
        hoverinfo="skip",
        legendgroup=name,
        showlegend=False,
    )


def _curve_trace(line, color, dash, name, task) -> go.Scatter:
    """A selection's mean score against k, with its CI and counts on hover."""
    return go.Scatter(
        x=line.k,
        y=line["mean"],
        mode="lines+markers",
        line={"color": color, "dash": dash, "width": 2},
        marker={"size": 6},
        name=name,
        legendgroup=name,
        customdata=line[["ci_low", "ci_high", "n_draws", "n_examples"]].to_numpy(),
        hovertemplate=(
            f"{name}<br>k=%{{x}}<br>score=%{{y:.3f}}"
            "<br>95% CI [%{customdata[0]:.3f}, %{customdata[1]:.3f}]"
            "<br>draws=%{customdata[2]}, examples=%{customdata[3]}"
            f"<extra>{task}</extra>"
        ),
    )


def breakdown_table(
    records: pd.DataFrame, gens: pd.DataFrame, task: str, k: int, metric: str = "accuracy"
) -> pd.DataFrame:
    """Mean score per haystack length x needle depth for unmasked, TopK and RandomK at ``k``.

    ``gens`` must carry the examples' ``n_sentences`` and ``depth`` (``generations.jsonl`` does
    for tasks whose rows record them, e.g. ``retrieval``). One row per panel, length and depth.
    """
    meta = gens[gens.task == task][["example_id", "n_sentences", "depth"]].drop_duplicates(
        "example_id"
    )
    rec = records[(records.task == task) & (records.metric == metric)]
    top, rand = TopK.display, RandomK.display
    rec = rec[(rec.selection == BASELINE) | ((rec.k == k) & rec.selection.isin([top, rand]))]
    rec = rec.assign(example_id=rec.example_id.astype(str)).merge(
        meta.assign(example_id=meta.example_id.astype(str)), on="example_id"
    )
    rec["panel"] = rec.selection.map(
        {BASELINE: "unmasked", top: f"{top} k={k}", rand: f"{rand} k={k}"}
    )
    return (
        rec.groupby(["panel", "n_sentences", "depth"], as_index=False)["value"]
        .agg(["mean", "count"])
        .reset_index(drop=True)
    )


def plot_breakdown(table: pd.DataFrame, title: str = "") -> go.Figure:
    """Heatmaps of :func:`breakdown_table`: x = needle depth, y = haystack length, one per panel."""
    panels = [p for p in ("unmasked",) if p in set(table.panel)] + sorted(
        set(table.panel) - {"unmasked"}, reverse=True
    )
    fig = make_subplots(
        rows=1, cols=len(panels), subplot_titles=panels, shared_yaxes=True, horizontal_spacing=0.04
    )
    for col, panel in enumerate(panels, start=1):
        sub = table[table.panel == panel]
        z = sub.pivot_table(index="n_sentences", columns="depth", values="mean")
        n = sub.pivot_table(index="n_sentences", columns="depth", values="count")
        fig.add_trace(
            go.Heatmap(
                z=z.to_numpy(), x=[f"{d:.2f}" for d in z.columns], y=[str(i) for i in z.index], zmin=0, zmax=1,
                colorscale="RdYlGn", showscale=col == len(panels), customdata=n.to_numpy(),
                hovertemplate="depth %{x}<br>%{y} filler sentences<br>score %{z:.2f} (n=%{customdata})<extra></extra>",
            ),
            row=1, col=col,
        )  # fmt: skip
        fig.update_xaxes(title_text="needle depth", row=1, col=col)
    fig.update_yaxes(title_text="haystack (filler sentences)", row=1, col=1)
    fig.update_layout(title=title or None, width=320 * len(panels) + 120, height=380)
    return fig
