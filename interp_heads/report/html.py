"""The run directory's tables, figures and its one self-contained, offline ``index.html``.

``build_report(run_dir)`` needs only the saved files (no model): ``manifest.json``,
``baseline.csv``, ``attribution.parquet``, ``summary.parquet`` and ``generations.jsonl``; any of
them may be missing (e.g. after ``attribute`` alone), and the page shows what there is.
Plotly's JavaScript is embedded once, inline, so the page works without a network.
"""

from __future__ import annotations

import html
import json
import os
from pathlib import Path

import pandas as pd

from interp_heads.errors import InputError
from interp_heads.folder import RunFolder
from interp_heads.names import safe_name
from interp_heads.report import page
from interp_heads.report.tables import (
    baseline_table,
    examples_table,
    probe_table,
    provenance_table,
    significance_table,
    topk_vs_random_table,
    verification_table,
)
from interp_heads.report.which_heads import (
    known_kinds_parts,
    known_markers,
    stability_parts,
    which_heads_parts,
)
from interp_heads.runfolder import atomic, write_atomic

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1400px;color:#222}
h1{font-size:1.6em}h2{margin-top:1.6em;border-bottom:1px solid #ddd;padding-bottom:4px}
table{border-collapse:collapse;font-size:13px;margin:8px 0}
td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4}.note{color:#666;font-size:13px}.grid{display:flex;flex-wrap:wrap;gap:8px}
pre{background:#f8f8f8;padding:8px;font-size:12px;overflow:auto;max-height:300px}
"""


def write_sweep_outputs(
    out_dir: str | os.PathLike, result, eval_tasks: dict | None = None, n_boot: int = 1000
) -> None:
    """``sweep.parquet`` (records), ``summary.parquet``/``.csv`` and ``generations.jsonl``."""
    folder = RunFolder(out_dir)
    folder.write_frame(folder.sweep_parquet, result.records)
    summary = result.summary(n_boot=n_boot)
    folder.write_frame(folder.summary_parquet, summary)
    folder.write_frame(
        folder.summary_csv, summary.assign(draw_means=summary["draw_means"].map(json.dumps))
    )
    folder.write_frame(folder.significance_csv, result.significance())
    gens = result.generations.copy()
    if eval_tasks:
        ref = {(name, e.id): e for name, task in eval_tasks.items() for e in task}
        exs = [ref.get((t, i)) for t, i in zip(gens.task, gens.example_id, strict=True)]
        gens["question"] = [getattr(e, "question", "") for e in exs]
        gens["answer"] = [getattr(e, "answer", "") for e in exs]
        for key in ("n_sentences", "depth", "context_words"):  # needle-in-a-haystack rows
            if any(e is not None and key in e.meta for e in exs):
                gens[key] = [e.meta.get(key) if e is not None else None for e in exs]
    with atomic(folder.generations) as tmp:
        gens.to_json(tmp, orient="records", lines=True, force_ascii=False)


class LoadedRun(dict):
    """The saved pieces of a run folder (a dict); a notebook cell shows its table and figure."""

    def _repr_html_(self) -> str:
        from interp_heads.notebook import run_html

        return run_html(self)


def load_run(run_dir: str | os.PathLike) -> LoadedRun:
    """The saved pieces of a run directory (``None`` for the missing ones)."""
    folder = RunFolder(run_dir)

    def opt(path, reader):
        if not path.exists():
            return None
        try:
            return reader(path)
        except pd.errors.EmptyDataError:  # e.g. significance.csv of a sweep without TopK
            return None
        except Exception as exc:  # pyarrow/pandas name a '<Buffer>', not the file
            msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise InputError(f"{path}: unreadable ({msg})") from None

    return LoadedRun(
        {
            "manifest": opt(folder.manifest, lambda p: json.loads(p.read_text())),
            "baseline": opt(folder.baseline_csv, pd.read_csv),
            "attribution": opt(folder.attribution_parquet, pd.read_parquet),
            "known": opt(folder.known_csv, pd.read_csv),
            "summary": opt(folder.summary_parquet, pd.read_parquet),
            "records": opt(folder.sweep_parquet, pd.read_parquet),
            "significance": opt(folder.significance_csv, pd.read_csv),
            "generations": opt(
                folder.generations, lambda p: pd.read_json(p, lines=True, dtype={"example_id": str})
            ),
        }
    )


def make_figures(run: dict) -> dict:
    """``{name: plotly Figure}``: seed figure, one heatmap per task, cross-task overlap."""
    from interp_heads.attribution import HeadScores, overlap, overlap_heatmap
    from interp_heads.report.figures import plot_sweep
    from interp_heads.report.heads import head_heatmap

    figs = {}
    summary = run.get("summary")
    if summary is not None and len(summary):
        fig = plot_sweep(summary, title="Masking TopK vs random heads while generating")
        n_tasks = summary["task"].nunique()
        fig.update_layout(
            width=max(900, 330 * n_tasks),
            height=500,
            margin={"t": 60, "b": 150},
            legend={"orientation": "h", "y": -0.3, "x": 0.5, "xanchor": "center"},
        )
        figs["seed_figure"] = fig
    figs.update(_breakdowns(run))
    attr = run.get("attribution")
    if attr is not None and len(attr):
        scores = {t: HeadScores.from_frame(g) for t, g in attr.groupby("task", sort=False)}
        marks = known_markers(run.get("known"))
        for task, s in scores.items():
            figs[f"heatmap_{task}"] = head_heatmap(s, "abs", None, marks).update_layout(
                width=560, height=max(360, 40 + 14 * s.n_layers)
            )
        if len(scores) > 1:
            ks = (run.get("manifest") or {}).get("ks") or [16]
            k = min(min(ks), next(iter(scores.values())).scores.numel())
            figs["overlap"] = overlap_heatmap(overlap(scores, k)).update_layout(
                width=640, height=520, yaxis={"autorange": "reversed"}
            )
    return figs


def _breakdowns(run: dict) -> dict:
    """Per-length x per-depth heatmaps for tasks whose rows record them (needle in a haystack)."""
    from interp_heads.report.figures import breakdown_table, plot_breakdown

    gens, records = run.get("generations"), run.get("records")
    if (
        gens is None
        or records is None
        or "depth" not in gens.columns
        or "n_sentences" not in gens.columns
    ):
        return {}
    # correctness: accuracy, else the Cognitive Mirrors rule (a run may score only that)
    metric = next((m for m in ("accuracy", "bleu_rouge_cosine") if m in set(records.metric)), None)
    if metric is None:
        return {}
    figs = {}
    for task in dict.fromkeys(gens.loc[gens.depth.notna(), "task"]):
        ks = sorted(k for k in records[records.task == task].k.unique() if k > 0)
        if not ks:
            continue
        k = 32 if 32 in ks else ks[len(ks) // 2]
        table = breakdown_table(records, gens, task, int(k), metric)
        if table.empty:
            continue
        figs[f"breakdown_{task}"] = plot_breakdown(
            table, f"{task}: {metric} by haystack length and needle depth"
        )
    return figs


def _plotlyjs() -> str:
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def build_report(run_dir: str | os.PathLike, written: list | None = None) -> Path:
    """Write ``figures/*.html`` and ``index.html`` from the saved results; returns ``index.html``.

    The page has only the sections the run has (``report.page``): an ``attribute`` run's page has
    no sweep sections, an ``ablate`` run's names the ranking it masked. ``written``, when given,
    is extended with every file written (the manifest lists them as the tool's).
    """
    written = [] if written is None else written
    folder = RunFolder(run_dir)
    folder.check_links()
    run = page.current(load_run(run_dir))
    figs = make_figures(run)
    folder.figures.mkdir(exist_ok=True)
    written.append(_plotlyjs_file(folder.figures))  # before plotly would write it in place
    for name, fig in figs.items():
        with atomic(folder.figure(name)) as tmp:
            fig.write_html(tmp, include_plotlyjs="directory", full_html=True)
        written.append(folder.figure(name))
    manifest = run.get("manifest") or {}
    cfg = manifest.get("config") or {}
    tasks = ", ".join(page.task_names(manifest, run)) or "no tasks"
    title = f"interp_heads run: {cfg.get('model', '?')} ({tasks})"
    parts = [f"<h1>{html.escape(title)}</h1>", page.status_line(manifest)]
    parts.append(page.next_command(manifest, str(run_dir)))
    parts.append(page.ranking_section(manifest))
    parts += _sweep_sections(run, figs)
    if run.get("baseline") is not None:
        parts += ["<h2>Baseline (unmasked model)</h2>", baseline_table(run.get("baseline"))]
    heat = [n for n in figs if n.startswith("heatmap_")]
    if heat:
        parts.append("<h2>Head attribution per task</h2>")
        parts.append(
            '<div class="grid">' + "".join(f"<div>{_div(figs, n)}</div>" for n in heat) + "</div>"
        )
    parts += known_kinds_parts(run) + stability_parts(manifest)
    if manifest.get("probe"):
        parts += ["<h2>How well does the probe tell the tasks apart?</h2>", probe_table(manifest)]
    if manifest.get("verification"):
        parts += _verification_section(manifest)
    for name, task in _breakdown_tasks(run, figs):
        parts.append(f"<h2>{html.escape(task)}: by haystack length and needle depth</h2>")
        parts.append(_div(figs, name))
    if "overlap" in figs:
        parts.append("<h2>Cross-task overlap of the top heads</h2>" + _div(figs, "overlap"))
    parts.extend(which_heads_parts(run_dir))
    if run.get("generations") is not None:
        parts.append("<h2>Example generations under masking</h2>")
        parts.append(examples_table(run.get("generations")))
    parts += ["<h2>Provenance</h2>", provenance_table(manifest)]
    doc = (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{CSS}</style>"
        f"<script type='text/javascript'>{_plotlyjs()}</script></head><body>"
        + "\n".join(p for p in parts if p)
        + "</body></html>"
    )
    write_atomic(folder.index, doc)
    written.append(folder.index)
    return folder.index


def _verification_section(manifest: dict) -> list[str]:
    return [
        "<h2>How far can each ranking be trusted?</h2>",
        '<p class="note">The exact drop of log p(answer) under mean ablation (the sweep\'s own '
        "intervention) for each ranking's top m heads and m heads drawn at random from the rest. "
        "Confirmed: a top head's exact drop exceeds every random head's. Spearman: the ranking's "
        "order against the exact drops. Flagged below 0.8 or with under half of the top confirmed.</p>",
        verification_table(manifest),
    ]


def _div(figs: dict, name: str) -> str:
    """A figure as a ``<div>`` of the page; its id is a safe name (``names.safe_name``)."""
    lay = figs[name].layout
    return figs[name].to_html(
        full_html=False,
        include_plotlyjs=False,
        div_id=f"fig-{safe_name(name)}",
        default_width=f"{lay.width}px" if lay.width else "100%",
        default_height=f"{lay.height or 450}px",
    )


def _sweep_sections(run: dict, figs: dict) -> list[str]:
    """Seed figure, TopK vs RandomK and significance tables (none when the run has no sweep)."""
    if run.get("summary") is None:
        return []
    return [
        "<h2>Seed figure</h2>",
        _div(figs, "seed_figure") if "seed_figure" in figs else "",
        '<p class="note">Solid: TopK; dashed: RandomK; dotted: layer-matched random heads; dash-dotted: exclusive TopK. '
        "Bands: 95% CI (two-level bootstrap over random draws and examples). Thin line: unmasked model.</p>",
        "<h2>TopK vs RandomK at each k</h2>",
        topk_vs_random_table(run.get("summary"), run.get("significance")),
        "<h2>Is TopK lower than the random controls?</h2>",
        '<p class="note">TopK minus control, mean [95% CI] from a paired bootstrap over examples '
        "and random draws; p: two-sided bootstrap p-value. Significant cells (CI excludes 0) are "
        "marked *. Drop ratio: TopK's drop from the unmasked score over the control's.</p>",
        significance_table(run.get("significance")),
    ]


def _breakdown_tasks(run: dict, figs: dict) -> list[tuple[str, str]]:
    gens = run.get("generations")
    tasks = [] if gens is None else [str(t) for t in dict.fromkeys(gens["task"])]
    return [(f"breakdown_{t}", t) for t in tasks if f"breakdown_{t}" in figs]


def _plotlyjs_file(figures: Path) -> Path:
    """``figures/plotly.min.js`` (the figures' shared script), rewritten atomically when damaged."""
    path = figures / "plotly.min.js"
    js = _plotlyjs()
    if not path.is_file() or path.stat().st_size != len(js.encode()):
        write_atomic(path, js)
    return path
