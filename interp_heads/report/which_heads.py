"""Report sections from ``<run>/heads/`` (written by ``docs/make_heads.py``): ranking stability,
with unstable top-k sets flagged, and the cross-task specificity heatmaps. Empty when absent."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd


def stability_html(frame: pd.DataFrame) -> str:
    """Split-half agreement per task and k; an unstable row is marked in bold."""
    rows = []
    for r in frame.sort_values(["task", "k"]).itertuples():
        flag = "<b>unstable</b>" if r.unstable else "stable"
        rows.append(
            f"<tr><td>{html.escape(str(r.task))}</td><td>{r.n_examples} ({r.n_half})</td>"
            f"<td>{r.k}</td><td>{r.jaccard:.2f}</td><td>{r.spearman:.2f}</td><td>{flag}</td></tr>"
        )
    head = (
        "<tr><th>task</th><th>rank examples (per half)</th><th>k</th><th>TopK Jaccard</th>"
        "<th>Spearman</th><th>top-k</th></tr>"
    )
    return f"<table>{head}{''.join(rows)}</table>"


def which_heads_parts(run_dir: str | Path) -> list[str]:
    """HTML parts for the report (nothing when ``make_heads`` has not run on this folder)."""
    from interp_heads.specificity import drop_heatmap

    store = Path(run_dir) / "heads"
    parts: list[str] = []
    if (store / "stability.csv").is_file():
        parts.append("<h2>Ranking stability (split-half)</h2>")
        parts.append(
            '<p class="note">Two disjoint halves of the rank examples rank the heads separately; '
            "unstable: the halves share under half of their top k (Jaccard &lt; 1/3).</p>"
        )
        parts.append(stability_html(pd.read_csv(store / "stability.csv")))
    if (store / "specificity.csv").is_file():
        matrix = pd.read_csv(store / "specificity.csv")
        parts.append(
            "<h2>Cross-task specificity: one task's TopK masked, every task evaluated</h2>"
        )
        for k in sorted(matrix.k.unique()):
            fig = drop_heatmap(matrix, int(k))
            parts.append(fig.to_html(full_html=False, include_plotlyjs=False))
    return parts
