"""The attribute page's head explorer (``figures.explorer``): one per ranked task, fed from the
run folder alone (``attribution/<task>.json`` for the scores and their provenance, read as a
plain file; ``known_heads.csv``; ``attention.json``'s ``explore`` record; the manifest's
stability), and linked to the task's Plotly heatmap: a click on a cell selects that head."""

from __future__ import annotations

from pathlib import Path

from interp_heads.figures.explorer import explorer_html, script_json
from interp_heads.report.finding import stability
from interp_heads.run import Run
from interp_heads.store.names import safe_name

LINK = """<script>window.addEventListener('load',function(){var f=document.getElementById(%s);
if(f&&f.on){f.on('plotly_click',function(e){var p=e.points&&e.points[0];
if(p&&p.customdata){window.ihxShow(%s,p.customdata[0]);}});}});</script>"""


def ranking_of(run_dir: str | Path, task: str, frame):
    """The task's ``HeadScores`` with its provenance (``attribution/<task>.json``, a plain
    file); from the ranking table alone (no interval, halves or exact drops) when the entry is
    absent or unreadable."""
    from interp_heads.attribution.scores import HeadScores

    try:
        scores = Run.at(run_dir).scores(task)
        if scores is not None and scores.task == task:
            return scores
    except Exception:  # absent, a link, damaged: fall back to the table  # noqa: BLE001
        pass
    return HeadScores.from_frame(frame)


def explorer_parts(run: dict, run_dir: str | Path, figs: dict) -> list[str]:
    """The "Head explorer" section (nothing for a run without a ranking table)."""
    attr = run.get("attribution")
    if attr is None or not len(attr):
        return []
    manifest, attention = run.get("manifest") or {}, run.get("attention") or {}
    parts = []
    for i, (task, frame) in enumerate(attr.groupby("task", sort=False)):
        task = str(task)
        scores = ranking_of(run_dir, task, frame)
        record = attention.get(task) if isinstance(attention, dict) else None
        explore = record.get("explore") if isinstance(record, dict) else None
        uid = f"ihx-page-{i}"
        parts.append(explorer_html(scores, run.get("known"), explore,
                                   stability(manifest, task, None), uid=uid))  # fmt: skip
        fig_id = f"fig-{safe_name(f'heatmap_{task}')}"
        if f"heatmap_{task}" in figs:
            parts.append(LINK % (script_json(fig_id), script_json(uid)))
    return [
        "<h2>Head explorer</h2>",
        '<p class="note">Click a head (here or in the heatmap above) for its score with the 95% '
        "interval over the rank examples, its rank by the method, in each split half and among "
        "the heads whose exact single-head ablation drop was measured, its known-kind scores, "
        "the ranking's stability and its attention pattern on the first rank prompts (last 16 "
        "tokens). All of it is read from this run folder.</p>",
        *parts,
    ]
