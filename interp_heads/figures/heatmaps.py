"""Per-head figures: the layer x head heatmap of a ranking and the task x task overlap heatmap."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from interp_heads.heads import head_label

MARKERS = {"previous_token": "triangle-left", "duplicate_token": "square-open",
           "induction": "star", "successor": "triangle-up", "retrieval": "diamond-open"}  # fmt: skip


def head_heatmap(
    scores, by: str = "abs", title: str | None = None, markers: dict | None = None
) -> go.Figure:
    """Layer x head heatmap of a ``HeadScores`` of the scores (diverging colours around 0), hover:
    label/score/rank; ``markers`` (``{kind: [(layer, head), ...]}``, e.g. known head kinds) adds one
    marker trace per kind on those heads."""
    ranks = scores.rank(by)
    custom = [
        [[head_label(layer, head), int(ranks[layer, head])] for head in range(scores.n_heads)]
        for layer in range(scores.n_layers)
    ]
    z = [[None if x != x else x for x in row] for row in scores.scores.tolist()]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=list(range(scores.n_heads)),
            y=list(range(scores.n_layers)),
            customdata=custom,
            colorscale="RdBu",
            zmid=0,
            colorbar={"title": "score"},
            hovertemplate="%{customdata[0]}<br>score=%{z:.4g}<br>rank=%{customdata[1]}<extra></extra>",
        )
    )
    for kind, heads in (markers or {}).items():
        fig.add_trace(
            go.Scatter(
                x=[h for _, h in heads],
                y=[layer for layer, _ in heads],
                mode="markers",
                name=kind,
                marker={"symbol": MARKERS.get(kind, "circle-open"), "size": 10, "color": "black"},
                hovertemplate=f"{kind}<extra></extra>",
            )
        )
    fig.update_layout(
        title=title or f"{scores.task}: {scores.method}",
        xaxis_title="head",
        yaxis_title="layer",
        yaxis={"autorange": "reversed"},
    )
    return fig


def overlap_heatmap(frame: pd.DataFrame, title: str | None = None) -> go.Figure:
    """Heatmap of an :func:`overlap` frame, values printed in the cells."""
    k = frame.attrs.get("k")
    fig = go.Figure(
        go.Heatmap(
            z=frame.values.tolist(),
            x=list(frame.columns),
            y=list(frame.index),
            zmin=0,
            zmax=1,
            colorscale="Viridis",
            text=[[f"{v:.2f}" for v in row] for row in frame.values.tolist()],
            texttemplate="%{text}",
            hovertemplate="%{y} vs %{x}<br>Jaccard=%{z:.3f}<extra></extra>",
        )
    )
    fig.update_layout(
        title=title or (f"Top-{k} head overlap (Jaccard)" if k else "Head overlap (Jaccard)")
    )
    return fig
