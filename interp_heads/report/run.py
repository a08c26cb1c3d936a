"""A run folder's saved pieces: its data tables written, read back, drawn, shown in a notebook.

``write_sweep_outputs`` writes the sweep's tables; ``load_run`` reads every saved piece
(``None`` for the missing ones); ``make_figures`` draws them; a loaded run shows its status,
its table and its main figure when it ends a notebook cell.
"""

from __future__ import annotations

import os

import pandas as pd

from interp_heads.errors import InputError, one_line
from interp_heads.figures.notebook import figure_html, table_html
from interp_heads.report import page
from interp_heads.report.finding import finding_html
from interp_heads.report.which_heads import known_markers
from interp_heads.run import Manifest, Run, RunWriter


def write_sweep_outputs(
    out_dir: str | os.PathLike, result, eval_tasks: dict | None = None, n_boot: int = 1000
) -> None:
    """The sweep's tables written into ``out_dir`` (``run.RunWriter.sweep_outputs``; kept under
    this name for notebooks and scripts)."""
    RunWriter(out_dir).sweep_outputs(result, eval_tasks, n_boot=n_boot)


class LoadedRun(dict):
    """The saved pieces of a run folder, a dict (``run["summary"]``, ``run["manifest"]`` ...;
    ``None`` for a piece the folder lacks). :meth:`summary` is the sweep's summary table,
    :meth:`figure` its TopK vs random curves; a notebook cell shows both."""

    path: str = ""

    def __repr__(self) -> str:
        manifest = Manifest.of(self.get("manifest"))
        model = manifest.model_spec or "?"
        pieces = [k for k, v in page.current(self).items() if v is not None and k != "manifest"]
        return (
            f"LoadedRun({self.path!r}, status={_status(manifest)!r}, model={model!r}, "
            f"tasks={page.task_names(manifest, self)}, pieces={pieces})"
        )

    def summary(self) -> pd.DataFrame:
        """The sweep's summary: one row per task, selection, k and metric (mean, 95% CI, ...)."""
        summary = page.current(self).get("summary")
        if summary is None:
            raise InputError(
                f"{self.path}: no sweep summary here (an attribute-only or unfinished run)"
            )
        return summary

    def figure(self):
        """The score-vs-k curves of TopK and random heads per task (a Plotly figure)."""
        self.summary()
        return make_figures({"summary": page.current(self).get("summary")})["seed_figure"]

    def _repr_html_(self) -> str:
        return run_html(self)


def _status(manifest: Manifest) -> str:
    """``complete``, ``incomplete`` (steps left to run) or the manifest's own status."""
    todo = manifest.todo()
    if todo is not None:
        return "incomplete" if todo else "complete"
    return "unknown" if manifest.status is None else manifest.status


def load_run(run_dir: str | os.PathLike) -> LoadedRun:
    """The saved pieces of a run directory (``None`` for the missing ones), as a
    :class:`LoadedRun` (``interp_heads.load_run``): the pieces of ``Run.open(run_dir)``, the
    one reader of a run folder (``interp_heads.run``).

    Every piece is read as a plain file of bounded size (``store.files.read_plain``: a link, a
    FIFO or a device is refused) and parsed with the task names kept as written.

    Raises:
        TypeError: ``run_dir`` is not a path.
        InputError: not a run folder, or a piece that is unreadable (one line naming it).
    """
    if not isinstance(run_dir, str | os.PathLike):
        raise TypeError(f"load_run: expected a run folder's path, got {type(run_dir).__name__}")
    loaded = LoadedRun(Run.open(run_dir).pieces())
    loaded.path = str(run_dir)
    return loaded


def k_grids(manifest: Manifest | dict | None) -> dict[str, tuple[str, list[int] | None]]:
    """The figures' k grids: ``{"seed_figure": (title suffix, ks or None for all)}``, and with
    ``scaled_ks`` beside ``ks`` in the config, the literal grid and the scaled one
    (``seed_figure_scaled``: the same fractions of this model's heads) apart."""
    manifest = Manifest.of(manifest)
    cfg, model = manifest.config or {}, manifest.model or {}
    literal, scaled = cfg.get("ks") or [], cfg.get("scaled_ks") or []
    try:
        n_total = int(model["n_layers"]) * int(model["n_heads"])
        fractions = [float(f) for f in scaled]
        literal = [int(k) for k in literal]
    except (KeyError, TypeError, ValueError):
        return {"seed_figure": ("", None)}
    if not scaled or not literal:
        return {"seed_figure": ("", None)}
    scaled_ks = sorted({max(1, round(f * n_total)) for f in fractions})
    return {
        "seed_figure": (": k as given", literal),
        "seed_figure_scaled": (f": k scaled to this model's {n_total} heads", scaled_ks),
    }


def make_figures(run: dict) -> dict:
    """``{name: plotly Figure}``: the Cognitive Mirrors figure (``seed_figure``), one heatmap per
    task, cross-task overlap, needle breakdowns. A table that cannot be drawn (edited by hand:
    text where numbers belong) is an ``InputError`` naming its file, never a crash."""
    figs = {}
    for source, draw in (
        ("summary.parquet", _sweep_figures),
        ("generations.jsonl", _breakdowns),
        ("heads/sufficiency_curves.csv", _sufficiency_figure),
        ("attribution.parquet", _attribution_figures),
    ):
        try:
            figs.update(draw(run))
        except Exception as exc:  # pandas and plotly raise many types for a table not theirs
            raise InputError(
                f"{source}: cannot be drawn ({type(exc).__name__}: {one_line(exc)})"
            ) from None
    return figs


NARROWEST_PX = 900  # the narrowest width a page's curves are drawn at (a 1000 px window)


def _sweep_figures(run: dict) -> dict:
    from interp_heads.figures.curves import legend_below, plot_sweep

    figs, summary = {}, run.get("summary")
    for name, (title, ks) in k_grids(run.get("manifest") or {}).items():
        grid = summary if summary is None or ks is None else summary[summary.k.isin([0, *ks])]
        if grid is None or not len(grid):
            continue
        fig = plot_sweep(grid, title=f"Masking TopK vs random heads while generating{title}")
        n_tasks, n_metrics = grid["task"].nunique(), grid["metric"].nunique()
        # the legend's rows planned for the narrowest page it is drawn on (the page's div
        # follows the window, ``report.html``), so a wrapped legend is never cut
        below = legend_below(fig, NARROWEST_PX, 60 + 280 * n_metrics + 70, top=60)
        fig.update_layout(width=max(900, 330 * n_tasks), **below)
        figs[name] = fig
    return figs


def _sufficiency_figure(run: dict) -> dict:
    curves = run.get("sufficiency_curves")
    if curves is None or not len(curves):
        return {}
    from interp_heads.figures.sufficiency import plot_faithfulness

    title = "Keeping only the TopK heads vs random heads (every other head ablated)"
    return {"sufficiency": plot_faithfulness(curves, title=title)}


def _attribution_figures(run: dict) -> dict:
    from interp_heads.attribution import HeadScores, overlap, overlap_heatmap
    from interp_heads.figures.heatmaps import head_heatmap

    figs, attr = {}, run.get("attribution")
    if attr is not None and len(attr):
        scores = {t: HeadScores.from_frame(g) for t, g in attr.groupby("task", sort=False)}
        marks = known_markers(run.get("known"))
        for task, s in scores.items():
            k = page.outline_k(run.get("manifest") or {}, s.n_layers * s.n_heads)
            figs[f"heatmap_{task}"] = head_heatmap(s, None, None, marks, top=k)  # its own order
        figs.update(_attention(run))
        if len(scores) > 1:
            ks = Manifest.of(run.get("manifest")).ks or [16]
            k = min(min(ks), next(iter(scores.values())).scores.numel())
            figs["overlap"] = overlap_heatmap(overlap(scores, k)).update_layout(
                width=640, height=520, yaxis={"autorange": "reversed"}
            )
    return figs


def _attention(run: dict) -> dict:
    """``attention_<task>``: the stored attention patterns of each task's top heads."""
    from interp_heads.figures.attention import attention_figure

    figs = {}
    for task, data in (run.get("attention") or {}).items():
        if isinstance(data, dict) and data.get("heads") and data.get("prompts"):
            title = f"{task}: attention of the top {len(data['heads'])} heads ({data.get('method', '')})"
            figs[f"attention_{task}"] = attention_figure(data, title)
    return figs


def _breakdowns(run: dict) -> dict:
    """Per-length x per-depth heatmaps for tasks whose rows record them (needle in a haystack)."""
    from interp_heads.figures.curves import breakdown_table, plot_breakdown

    gens, records = run.get("generations"), run.get("records")
    if (
        gens is None
        or records is None
        or "depth" not in gens.columns
        or "n_sentences" not in gens.columns
    ):
        return {}
    # correctness: accuracy, else a Cognitive Mirrors rule (a run may score only that)
    rules = ("accuracy", "cognitive_mirrors_accuracy_gold", "bleu_rouge_cosine")
    rules += ("cognitive_mirrors_accuracy",)
    metric = next((m for m in rules if m in set(records.metric)), None)
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


def run_html(run: dict) -> str:
    """A loaded run folder: its status, ranking or sweep summary, and its main figure."""
    run = page.current(run)
    manifest = run.get("manifest") or {}
    parts = [finding_html(run), page.status_line(manifest)]
    summary, attr = run.get("summary"), run.get("attribution")
    if summary is not None and len(summary):
        cols = [
            c
            for c in ("task", "selection", "k", "metric", "mean", "ci_low", "ci_high")
            if c in summary
        ]
        parts.append(table_html(summary[cols], "Sweep summary"))
    elif attr is not None and len(attr):
        parts.append(
            table_html(
                attr.sort_values(["task", "rank"])[["task", "rank", "label", "score"]], "Ranking"
            )
        )
    figs = make_figures(run)
    main = figs.get("seed_figure") or next(
        (f for n, f in figs.items() if n.startswith("heatmap_")), None
    )
    if main is not None:
        parts.append(figure_html(main))
    return "".join(parts)
