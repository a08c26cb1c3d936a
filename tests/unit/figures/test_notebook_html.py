"""Rich displays carry plotly.js once per session, in the first figure, not once per figure."""

from __future__ import annotations

import plotly.graph_objects as go

from interp_heads.figures import notebook


def test_plotly_js_is_inlined_in_the_first_figure_only():
    notebook.new_session()
    fig = go.Figure(go.Bar(x=[1], y=[1]))
    first, second = notebook.figure_html(fig), notebook.figure_html(fig)
    assert "plotly.js v" in first and "Plotly.newPlot" in first
    assert "plotly.js v" not in second and "Plotly.newPlot" in second
    assert len(second) < len(first) / 100
    notebook.new_session()  # the output that carried it was cleared: carry it again
    assert "plotly.js v" in notebook.figure_html(fig)
