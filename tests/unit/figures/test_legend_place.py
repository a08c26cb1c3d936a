"""The curves' legend sits below the x-axis titles, where its wrapped rows cover no panel or
figure title, and the figure grows by the rows it wraps into."""

from __future__ import annotations

import pandas as pd

from interp_heads.figures.curves import plot_sweep


def _summary(tasks):
    rows = []
    for t in tasks:
        for m in ("accuracy", "chrf"):
            rows.append({"task": t, "selection": "baseline", "k": 0, "metric": m, "label": m, "mean": 1.0,
                         "ci_low": 1.0, "ci_high": 1.0, "n_draws": 1, "n_examples": 8})  # fmt: skip
            for sel in ("TopK", "RandomK"):
                for k in (4, 16):
                    rows.append({"task": t, "selection": sel, "k": k, "metric": m, "label": m, "mean": 0.5,
                                 "ci_low": 0.4, "ci_high": 0.6, "n_draws": 2, "n_examples": 8})  # fmt: skip
    return pd.DataFrame(rows)


def test_the_legend_is_below_the_panels_and_a_narrow_figure_grows_for_its_rows():
    narrow = plot_sweep(_summary(["retrieval", "math_calculation"]), title="t")
    wide = plot_sweep(_summary(["retrieval", "math_calculation", "inference", "knowledge_recall"]))
    for fig in (narrow, wide):
        assert fig.layout.legend.y < 0 and fig.layout.legend.yanchor == "top"
    assert narrow.layout.margin.b > wide.layout.margin.b  # more rows when narrow
    assert (
        narrow.layout.height - narrow.layout.margin.b == wide.layout.height - wide.layout.margin.b
    )
