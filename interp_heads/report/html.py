"""The run directory's tables, figures and its offline ``index.html``.

``build_report(run_dir)`` needs only the saved files (no model): ``manifest.json``,
``baseline.csv``, ``attribution.parquet``, ``summary.parquet`` and ``generations.jsonl``; any of
them may be missing (e.g. after ``attribute`` alone), and the page shows what there is.
Plotly's JavaScript is loaded from ``figures/plotly.min.js`` beside the page (written once,
shared with the figures' own pages), so the page works without a network and stays small.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from interp_heads.figures.escape import esc
from interp_heads.report import finding, page
from interp_heads.report.explore_section import explorer_parts
from interp_heads.report.generations import generations_section
from interp_heads.report.run import load_run, make_figures
from interp_heads.report.sufficiency_section import sufficiency_parts
from interp_heads.report.tables import (
    baseline_table,
    damage_table,
    probe_table,
    provenance_table,
    significance_table,
    top_heads_table,
    topk_vs_random_table,
    verification_table,
)
from interp_heads.report.which_heads import (
    known_kinds_parts,
    known_markers,
    stability_parts,
    which_heads_parts,
)
from interp_heads.run.manifest import Manifest
from interp_heads.store import atomic, write_atomic
from interp_heads.store.files import read_plain
from interp_heads.store.folder import RunFolder
from interp_heads.store.names import safe_name
from interp_heads.sweep import stats

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1400px;color:#222}
h1{font-size:1.6em}h2{margin-top:1.6em;border-bottom:1px solid #ddd;padding-bottom:4px}
table{border-collapse:collapse;font-size:13px;margin:8px 0}
td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4}.note{color:#666;font-size:13px}.grid{display:flex;flex-wrap:wrap;gap:8px}
pre{background:#f8f8f8;padding:8px;font-size:12px;overflow:auto;max-height:300px}
"""


PLOTLY_SRC = "figures/plotly.min.js"  # relative to index.html


def _plotlyjs() -> str:
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def build_report(
    run_dir: str | os.PathLike, written: list | None = None, static: list[str] | None = None
) -> Path:
    """Write ``figures/*.html`` and ``index.html`` from the saved results; returns ``index.html``.

    The page has only the sections the run has (``report.page``): an ``attribute`` run's page has
    no sweep sections, an ``ablate`` run's names the ranking it masked. ``written``, when given,
    is extended with every file written (the manifest lists them as the tool's). ``static``
    (e.g. ``["svg", "png"]``): also every figure as ``figures/<name>.<format>``
    (``figures.static.write_static``; needs kaleido and a Chrome/Chromium).
    """
    written = [] if written is None else written
    folder = RunFolder(run_dir)
    folder.check_links()
    run = page.relabelled(page.current(load_run(run_dir)))
    heads_parts = which_heads_parts(run_dir)  # read (and refused) before any file is written
    figs = make_figures(run)
    folder.figures.mkdir(exist_ok=True)
    written.append(_plotlyjs_file(folder.figures))  # before plotly would write it in place
    for name, fig in figs.items():
        with atomic(folder.figure(name)) as tmp:
            fig.write_html(tmp, include_plotlyjs="directory", full_html=True)
        written.append(folder.figure(name))
    if static:
        from interp_heads.figures.static import write_static

        written.extend(write_static(figs, folder.figures, static))
    manifest = Manifest.of(run.get("manifest"))
    cfg = manifest.config or {}
    tasks = ", ".join(page.task_names(manifest, run)) or "no tasks"
    title = f"interp_heads run: {cfg.get('model', '?')} ({tasks})"
    # the finding first (sentences, verdict table, warnings), then status and figures
    parts = [f"<h1>{esc(title)}</h1>", finding.finding_html(run), page.status_line(manifest)]
    parts.append(page.next_command(manifest, str(run_dir)))
    parts.append(page.ranking_section(manifest, run_dir))
    parts += _sweep_sections(run, figs)
    parts += sufficiency_parts(run, figs, _div)
    if run.get("baseline") is not None:
        parts += ["<h2>Baseline (unmasked model)</h2>", baseline_table(run.get("baseline"))]
    parts += _attribution_sections(run, figs)
    parts += explorer_parts(run, run_dir, figs)
    parts += _attention_section(figs)
    parts += known_kinds_parts(run) + stability_parts(manifest)
    if manifest.probe:
        parts += ["<h2>How well does the probe tell the tasks apart?</h2>", probe_table(manifest)]
    if manifest.damage_k:
        metric = esc(str(manifest.damage_metric or ""))
        parts += ["<h2>At which k do random heads still keep 80% of the score?</h2>",
                  f'<p class="note">The damage-matched k: the largest k of the grid at which RandomK '
                  f"keeps at least 80% of the unmasked {metric}.</p>", damage_table(manifest)]  # fmt: skip
    if manifest.verification:
        parts += _verification_section(manifest)
    for name, task in _breakdown_tasks(run, figs):
        parts.append(f"<h2>{esc(task)}: by haystack length and needle depth</h2>")
        parts.append(_div(figs, name))
    if "overlap" in figs:
        parts.append("<h2>Cross-task overlap of the top heads</h2>" + _div(figs, "overlap"))
    parts.extend(heads_parts)
    parts.append(
        generations_section(run.get("generations"), run.get("records"), run.get("prompts"))
    )
    parts.append(page.files_section(run_dir))
    parts += ["<h2>Provenance</h2>", provenance_table(manifest)]
    doc = (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{esc(title)}</title><style>{CSS}{finding.CSS}</style>"
        # the figures' shared copy of plotly.js, beside the page: offline, and loaded once
        f"<script type='text/javascript' src='{PLOTLY_SRC}'></script></head><body>"
        + "\n".join(p for p in parts if p)
        + "</body></html>"
    )
    write_atomic(folder.index, doc)
    written.append(folder.index)
    return folder.index


def _attribution_sections(run: dict, figs: dict) -> list[str]:
    """Per task: the layer x head heatmap (TopK outlined, known kinds marked) beside a table of
    its top heads and their scores."""
    attr = run.get("attribution")
    heat = [n for n in figs if n.startswith("heatmap_")]
    if attr is None or not heat:
        return []
    kinds: dict | None = None
    if run.get("known") is not None:
        kinds = {}
        for kind, heads in known_markers(run.get("known")).items():
            for h in heads:
                kinds.setdefault(h, []).append(kind.replace("_", "-"))
    manifest = run.get("manifest") or {}
    cells = []
    for name in heat:
        task = name.removeprefix("heatmap_")
        n_total = int((attr.task == task).sum())
        k = page.outline_k(manifest, n_total)
        n = min(max(10, k), 32)
        table = top_heads_table(attr, task, n, kinds)
        cells.append(
            f"<div>{_div(figs, name)}</div><div><h3>{esc(task)}: top {n} heads</h3>{table}</div>"
        )
    return [
        "<h2>Head attribution per task</h2>",
        "<p class=\"note\">Each head's score by the ranking's method (colours diverge around 0; "
        "when one head dominates, the scale stops at the 99th percentile of |score| and its "
        "colour bar says so; hover for the head, its true score and rank). The ranking's top k heads are outlined (k: the "
        "run's smallest, else 8); known head kinds are marked. The whole ranking is in "
        "<code>ranking.csv</code>.</p>",
        '<div class="grid">' + "".join(cells) + "</div>",
    ]


def _attention_section(figs: dict) -> list[str]:
    """The attention patterns of each task's top heads on its first rank prompts (``attribute``)."""
    names = [n for n in figs if n.startswith("attention_")]
    if not names:
        return []
    return [
        "<h2>Attention patterns of the top heads</h2>",
        '<p class="note">Where each of the top-ranked heads looks on the task\'s first rank '
        "prompts, as the model saw them: rows are query positions, columns key positions (the "
        "last 48 tokens at most); choose the prompt in the menu. Stored in "
        "<code>attention.json</code> by <code>attribute</code>.</p>",
        *(_div(figs, n) for n in names),
    ]


def _verification_section(manifest: Manifest) -> list[str]:
    return [
        "<h2>How far can each ranking be trusted?</h2>",
        '<p class="note">The exact drop of log p(answer) under mean ablation (the sweep\'s own '
        "intervention) for each ranking's top m heads and m heads drawn at random from the rest. "
        "Confirmed: a top head's exact drop exceeds every random head's; the top set is confirmed "
        "when at least half of its heads are. Spearman: the ranking's order against the exact "
        "drops; the order is confirmed at 0.8 or more over all verified heads. A verdict needs 5 "
        "heads at the top and 5 in the sample (with fewer no order can be told from chance).</p>",
        verification_table(manifest),
    ]


def _div(figs: dict, name: str) -> str:
    """A figure as a ``<div>`` of the page; its id is a safe name (``store.names.safe_name``).
    The curves follow the window up to their own width (a wide figure in a narrow window cut
    its legend); the others keep their size (a heatmap's cells are sized to be read)."""
    import plotly.graph_objects as go

    fig, lay = figs[name], figs[name].layout
    if name.startswith(FOLLOW_WINDOW) and lay.width:
        free = go.Figure(fig).update_layout(width=None, autosize=True)  # sized by the div
        inner = free.to_html(full_html=False, include_plotlyjs=False,
                            div_id=f"fig-{safe_name(name)}", default_width="100%",
                            default_height=f"{lay.height or 450}px",
                            config={"responsive": True})  # fmt: skip
        return f'<div style="max-width:{int(lay.width)}px">{inner}</div>'
    return fig.to_html(
        full_html=False,
        include_plotlyjs=False,
        div_id=f"fig-{safe_name(name)}",
        default_width=f"{lay.width}px" if lay.width else "100%",
        default_height=f"{lay.height or 450}px",
    )


FOLLOW_WINDOW = ("seed_figure", "sufficiency")


def _sweep_sections(run: dict, figs: dict) -> list[str]:
    """The Cognitive Mirrors figure (score vs masked heads), TopK vs RandomK and significance
    tables (none when the run has no sweep)."""
    if run.get("summary") is None:
        return []
    return [
        "<h2>TopK vs random heads while generating (the Cognitive Mirrors figure)</h2>",
        _div(figs, "seed_figure") if "seed_figure" in figs else "",
        _div(figs, "seed_figure_scaled") if "seed_figure_scaled" in figs else "",
        _caption(figs),
        "<h2>TopK vs RandomK at each k</h2>",
        topk_vs_random_table(run.get("summary"), run.get("significance")),
        "<h2>Is TopK lower than the random controls?</h2>",
        '<p class="note">TopK minus control, mean [95% CI] inverting the test; p: the exact test '
        "with examples and random draws as random factors (sweep.exact), p (Holm): adjusted "
        "over this table's rows, and what decides; detectable: the smallest difference the row detects "
        "with 80% power. A verdict needs at least "
        f"{stats.MIN_EXAMPLES} evaluated examples and {stats.MIN_DRAWS} random draws (why: "
        "<code>interp_heads.sweep.stats</code>); cells whose CI excludes 0 and p < 0.05 with "
        "enough of both "
        "are marked *. Drop ratio: TopK's drop from the unmasked score over the control's (both "
        "drops when the control did not drop).</p>",
        significance_table(run.get("significance")),
    ]


def _caption(figs: dict) -> str:
    """The curves' caption, from the traces the figure draws (``figures.curves.caption``)."""
    from interp_heads.figures.curves import caption

    fig = figs.get("seed_figure") or figs.get("seed_figure_scaled")
    return f'<p class="note">{esc(caption(fig))}</p>' if fig is not None else ""


def _breakdown_tasks(run: dict, figs: dict) -> list[tuple[str, str]]:
    gens = run.get("generations")
    tasks = [] if gens is None else [str(t) for t in dict.fromkeys(gens["task"])]
    return [(f"breakdown_{t}", t) for t in tasks if f"breakdown_{t}" in figs]


def _plotlyjs_file(figures: Path) -> Path:
    """``figures/plotly.min.js`` (the figures' shared script), rewritten atomically unless its
    bytes are exactly the script's (a file of the right size but other content is damaged too)."""
    path = figures / "plotly.min.js"
    js = _plotlyjs().encode()
    if path.is_symlink() or not path.is_file() or _sha256(path) != hashlib.sha256(js).digest():
        write_atomic(path, js)
    return path


def _sha256(path: Path) -> bytes:
    try:
        return hashlib.sha256(read_plain(path)).digest()  # never a link, bounded
    except OSError:
        return b""
