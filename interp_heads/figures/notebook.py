"""How results show in a Jupyter cell: a compact HTML table and the figure (``_repr_html_``).

``HeadScores``, ``SweepResult`` and a loaded run folder (``report.load_run``) end a notebook cell
the way pandas and Plotly objects do: the top of the table (escaped: ``figures.escape``) and the
figure, so no extra call is needed to look at a result. The first figure of a session carries
plotly.js inline (about 4.6 MB) rather than a link to a CDN, so it draws offline too; the later
ones use that copy (the page already has it), so a notebook holds plotly.js once, not once per
figure. A kernel restart starts a new session (its first figure carries plotly.js again), and so
does :func:`new_session` (after clearing the output that carried it).
"""

from __future__ import annotations

import pandas as pd

from interp_heads.figures.escape import esc, esc_table

ROWS = 10  # table rows shown in a cell
_session = {"plotlyjs_sent": False}  # whether this kernel's outputs already carry plotly.js


def table_html(frame: pd.DataFrame, caption: str) -> str:
    more = f" (first {ROWS} of {len(frame)})" if len(frame) > ROWS else ""
    body = esc_table(frame.head(ROWS))
    return f"<div><b>{esc(caption)}</b>{esc(more)}{body}</div>"


def new_session() -> None:
    """Inline plotly.js again in the next figure (after the outputs that carried it were cleared)."""
    _session["plotlyjs_sent"] = False


def figure_html(fig) -> str:
    """The figure as HTML that draws offline: plotly.js inlined in the session's first figure,
    the later ones drawn with it."""
    first = not _session["plotlyjs_sent"]
    _session["plotlyjs_sent"] = True
    return fig.to_html(full_html=False, include_plotlyjs=first)


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
