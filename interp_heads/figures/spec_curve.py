"""The specification curve (Simonsohn, Simmons & Nelson 2020): every cell's TopK - RandomK with
its 95% interval, cells sorted by their mean effect over tasks, and below them the choice matrix
(which option each cell takes). Drawn from ``studies.spec_curve``'s frame only."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from interp_heads.tasks.schema import TASK_TITLES

TASK_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]


def cell_id(row) -> str:
    """A cell's name: its end, and the choice flipped from it with the option taken (a factorial
    cell: every choice that differs from its end)."""
    end = f"{row['end']} end"
    if row.get("design") == "factorial":
        differ = [c for c in str(row["flipped"]).split(",") if c]
        return f"{end} factorial: " + (", ".join(f"{c} = {row[c]}" for c in differ) or "the end")
    return end if not row["flipped"] else f"{end}, {row['flipped']} = {row[row['flipped']]}"


def plot_spec_curve(
    frame: pd.DataFrame,
    choices: dict[str, list[str]],
    title: str = "Which choice decides the verdict: TopK - RandomK in every cell (95% CI)",
    cell_labels: bool = True,
) -> go.Figure:
    """Effect per cell and task (top) and the choice matrix (bottom); ``choices``: each choice's
    options in the order the matrix lists them (a column of the frame each). Filled: the cell
    collapses the task; open: it does not; a cross: undecided (``metrics.scorable``).
    ``cell_labels``: name each cell under the matrix (a wide factorial reads the matrix alone)."""
    frame = frame.assign(cell=[cell_id(r) for _, r in frame.iterrows()])
    order = frame.groupby("cell", sort=False)["effect"].mean().sort_values().index.tolist()
    x = {c: i for i, c in enumerate(order)}
    rows = [f"{c}: {o}" for c, opts in choices.items() for o in opts]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.55, 0.45],
                        vertical_spacing=0.04)  # fmt: skip
    for i, (task, t) in enumerate(frame.groupby("task", sort=False)):
        color = TASK_COLORS[i % len(TASK_COLORS)]
        symbol = ["circle" if v.startswith("yes") else "x-thin-open" if v.startswith("undecided")
                  else "circle-open" for v in t.verdict]  # fmt: skip
        fig.add_trace(go.Scatter(
            x=[x[c] + (i - 1.5) * 0.08 for c in t.cell], y=t.effect, mode="markers",
            name=TASK_TITLES.get(task, task), legendgroup=task,
            marker={"color": color, "size": 8, "symbol": symbol,
                    "line": {"color": color, "width": 1.5}},
            error_y={"type": "data", "symmetric": False, "array": t.effect_high - t.effect,
                     "arrayminus": t.effect - t.effect_low, "thickness": 1, "width": 0},
            customdata=t[["cell", "p", "n", "draws", "verdict"]].to_numpy(),
            hovertemplate="%{customdata[0]}<br>TopK - RandomK %{y:.2f}<br>p = %{customdata[1]:.3f}"
                          ", n = %{customdata[2]}, draws = %{customdata[3]}<br>collapses: "
                          "%{customdata[4]}<extra>" + TASK_TITLES.get(task, task) + "</extra>",
        ), row=1, col=1)  # fmt: skip
    fig.add_hline(y=0, line={"color": "#888", "width": 1}, row=1, col=1)
    cells = frame.drop_duplicates("cell").set_index("cell")
    for c in order:
        on = [f"{ch}: {cells.loc[c, ch]}" for ch in choices]
        fig.add_trace(go.Scatter(
            x=[x[c]] * len(on), y=on, mode="markers", showlegend=False, hoverinfo="skip",
            marker={"color": "#333", "size": 7, "symbol": "square"},
        ), row=2, col=1)  # fmt: skip
    fig.update_yaxes(title_text="TopK - RandomK<br>(filled: collapses; x: undecided)", row=1,
                     col=1)  # fmt: skip
    fig.update_yaxes(categoryorder="array", categoryarray=rows[::-1], tickmode="array",
                     tickvals=rows, ticktext=rows, row=2, col=1)  # fmt: skip
    fig.update_xaxes(tickvals=list(x.values()), ticktext=order if cell_labels else [""] * len(x),
                     tickangle=-40, row=2, col=1)  # fmt: skip
    fig.update_layout(
        title=title,
        width=max(760, (46 if cell_labels else 22) * len(order) + 300),
        height=720 if cell_labels else 640,
        template="plotly_white",
        legend={"orientation": "h", "y": 1.02, "x": 1, "xanchor": "right", "yanchor": "bottom"},
        margin={"t": 90, "b": 150 if cell_labels else 40},
    )
    return fig
