"""How results show in a Jupyter cell: a compact HTML table and the figure (``_repr_html_``).

``HeadScores``, ``SweepResult`` and a loaded run folder (``report.load_run``) end a notebook cell
the way pandas and Plotly objects do: the top of the table (escaped: ``figures.escape``) and the
figure, so no extra call is needed to look at a result. The figure carries plotly.js inline
(about 4.6 MB per figure) rather than a link to a CDN, so it draws offline too.
"""

from __future__ import annotations

import pandas as pd

from interp_heads.figures.escape import esc, esc_table

ROWS = 10  # table rows shown in a cell


def table_html(frame: pd.DataFrame, caption: str) -> str:
    more = f" (first {ROWS} of {len(frame)})" if len(frame) > ROWS else ""
    body = esc_table(frame.head(ROWS))
    return f"<div><b>{esc(caption)}</b>{esc(more)}{body}</div>"


def figure_html(fig) -> str:
    """The figure as HTML with plotly.js inlined: it draws offline, in any notebook front end."""
    return fig.to_html(full_html=False, include_plotlyjs=True)


def scores_html(scores) -> str:
    """The top heads of a ``HeadScores`` and its layer x head heatmap."""
    frame = scores.to_frame().sort_values("rank")[["rank", "label", "score", "refined"]]
    title = f"HeadScores: {scores.task}, {scores.method}, {scores.n_layers}x{scores.n_heads} heads"
    return table_html(frame, title) + figure_html(scores.heatmap())


def sweep_html(result) -> str:
    """Mean [95% CI] per task, selection, k and metric of a ``SweepResult``, and the Cognitive Mirrors figure."""
    summary = result.summary(n_boot=200)
    cols = [
        c for c in ("task", "selection", "k", "metric", "mean", "ci_low", "ci_high") if c in summary
    ]
    return table_html(summary[cols], "Sweep summary") + figure_html(result.figure())
