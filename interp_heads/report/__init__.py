"""Every figure and HTML table of a run: the Cognitive Mirrors figure, per-head heatmaps, breakdowns, the report page.

- :mod:`~interp_heads.figures.curves`: score-vs-k curves (``plot_sweep``) and the retrieval
  length x depth breakdown.
- :mod:`~interp_heads.figures.heatmaps`: the layer x head heatmap of a ranking, the overlap heatmap.
- :mod:`~interp_heads.report.tables`: the HTML tables of the report page.
- :mod:`~interp_heads.report.run`: the run's tables on disk, read back and drawn.
- :mod:`~interp_heads.report.html`: the self-contained ``index.html``.
"""

from interp_heads.figures.curves import breakdown_table, plot_breakdown, plot_sweep
from interp_heads.figures.heatmaps import head_heatmap, overlap_heatmap
from interp_heads.report.html import build_report
from interp_heads.report.run import load_run, make_figures, write_sweep_outputs

__all__ = [
    "breakdown_table",
    "build_report",
    "head_heatmap",
    "load_run",
    "make_figures",
    "overlap_heatmap",
    "plot_breakdown",
    "plot_sweep",
    "write_sweep_outputs",
]
