"""Plotly figures and notebook display: score-vs-k curves, per-head heatmaps."""
