"""Per-head figures: the layer x head heatmap of a ranking and the task x task overlap heatmap."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from interp_heads.heads import head_label

MARKERS = {"previous_token": "triangle-left", "duplicate_token": "square-open",
           "induction": "star", "successor": "triangle-up", "retrieval": "diamond-open"}  # fmt: skip


ROW_PX = 20  # a layer's row, at least: readable hover targets and tick labels for every layer
MIN_PLOT_PX = 240  # the plot area's height, at least (a 3-layer model's rows grow to fill it)
MAX_CELL_PX = 44  # a head's column, at most (narrow models would get very wide cells)


def head_heatmap(
    scores,
    by: str | None = None,
    title: str | None = None,
    markers: dict | None = None,
    top: int | None = None,
) -> go.Figure:
    """Layer x head heatmap of a ``HeadScores`` (diverging colours around 0, the scale clipped at
    a percentile when one head dominates: :func:`colour_limit`), sized to be read:
    every layer a row of :data:`ROW_PX` pixels with its own tick, every head ticked.

    Hover: label, score, rank. ``markers`` (``{kind: [(layer, head), ...]}``, e.g. known head
    kinds) adds one marker trace per kind, smaller than a cell, with the legend below the plot
    (clear of the colour bar). ``top``: the ranking's top ``top`` heads are outlined.
    ``by``: the order of the outline and of the hover ranks; None (default): the ranking's own
    (``scores.rank_by``: signed for the methods that rank by signed score, refined heads first).
    """
    ranks = scores.rank(by)
    custom = [
        [[head_label(layer, head), int(ranks[layer, head])] for head in range(scores.n_heads)]
        for layer in range(scores.n_layers)
    ]
    z = [[None if x != x else x for x in row] for row in scores.scores.tolist()]
    limit, clipped = colour_limit([x for row in z for x in row if x is not None])
    bar_title = (
        f"score<br>clipped at<br>±{limit:.3g}<br>({CLIP_PERCENTILE}th pct<br>of |score|)"
        if clipped
        else "score"
    )
    cell = max(ROW_PX, min(MAX_CELL_PX, 540 // max(1, scores.n_heads)))
    row = max(ROW_PX, MIN_PLOT_PX // max(1, scores.n_layers))
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=list(range(scores.n_heads)),
            y=list(range(scores.n_layers)),
            customdata=custom,
            colorscale="RdBu",
            zmid=0,
            zmin=-limit,
            zmax=limit,
            colorbar={"title": {"text": bar_title}, "len": 1.0, "y": 0.5, "thickness": 14},
            hovertemplate="%{customdata[0]}<br>score=%{z:.4g}<br>rank=%{customdata[1]}<extra></extra>",
        )
    )
    size = max(5, int(0.45 * min(cell, row)))  # well inside a cell
    for kind, heads in (markers or {}).items():
        fig.add_trace(
            go.Scatter(
                x=[h for _, h in heads],
                y=[layer for layer, _ in heads],
                mode="markers",
                name=kind,
                marker={
                    "symbol": MARKERS.get(kind, "circle-open"),
                    "size": size,
                    "color": "black",
                    "line": {"width": 1},
                },  # fmt: skip
                hovertemplate=f"{kind}<extra></extra>",
            )
        )
    if top:
        _outline(fig, scores.top(top, by), f"top {top}")
    _size(fig, scores.n_layers * row, scores.n_heads * cell, bool(markers) or bool(top))
    fig.update_layout(title=title or f"{scores.task}: {scores.method}")
    return fig


CLIP_PERCENTILE = 99  # the colour scale's end, when one head dominates (percentile of |score|)
DOMINANT = 1.5  # one head dominates when the largest |score| exceeds that percentile 1.5 times


def colour_limit(values: list[float]) -> tuple[float, bool]:
    """The colour scale's end ``c`` (colours run from -c to c around 0) and whether it clips:
    the largest |score|, unless one head dominates (more than :data:`DOMINANT` times the
    :data:`CLIP_PERCENTILE` th percentile of |score|), when the scale stops at that percentile
    so that the other heads are not all drawn white (hover still shows every true score)."""
    mags = sorted(abs(float(v)) for v in values if v == v)
    if not mags or mags[-1] == 0:
        return 1.0, False
    pos = (len(mags) - 1) * CLIP_PERCENTILE / 100  # linear interpolation between ranks
    lo = int(pos)
    pct = mags[lo] + (mags[min(lo + 1, len(mags) - 1)] - mags[lo]) * (pos - lo)
    if pct > 0 and mags[-1] > DOMINANT * pct:
        return pct, True
    return mags[-1], False


def _outline(fig: go.Figure, heads, name: str) -> None:
    """A black frame around each of ``heads``' cells, and a legend entry naming them."""
    for layer, head in heads:
        fig.add_shape(
            type="rect", x0=head - 0.5, x1=head + 0.5, y0=layer - 0.5, y1=layer + 0.5,
            line={"color": "black", "width": 2}, fillcolor="rgba(0,0,0,0)",
        )  # fmt: skip
    fig.add_trace(
        go.Scatter(
            x=[None],
            y=[None],
            mode="markers",
            name=f"{name} (outlined)",
            hoverinfo="skip",
            marker={"symbol": "square-open", "size": 12, "color": "black", "line": {"width": 2}},
        )  # fmt: skip
    )


def _size(fig: go.Figure, plot_h: int, plot_w: int, legend: bool) -> None:
    """Width and height from the plot area; every layer and head ticked; legend under the plot."""
    top, bottom = 50, 60 + (50 if legend else 0)
    fig.update_layout(
        width=plot_w + 170,
        height=plot_h + top + bottom,
        margin={"t": top, "b": bottom, "l": 60, "r": 20},
        xaxis={"title": "head", "tickmode": "linear", "dtick": 1, "showgrid": False,
               "zeroline": False},
        yaxis={"title": "layer", "tickmode": "linear", "dtick": 1, "autorange": "reversed",
               "showgrid": False, "zeroline": False, "tickfont": {"size": 11}},
        showlegend=legend,
        legend={"orientation": "h", "x": 0, "y": -60 / plot_h, "yanchor": "top"},
        plot_bgcolor="white",
    )  # fmt: skip


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
