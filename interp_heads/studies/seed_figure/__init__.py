"""Write docs/results.md and its figures from the demo's run folder (``make demo`` calls this last).

    interp-heads study seed_figure   # make demo: configs/seed_figure.toml into runs/demo, the page

The demo is one experiment with two k grids (``configs/seed_figure.toml``: ``ks``, the
Cognitive Mirrors figure's literal 16..128, and ``scaled_ks``, the same fractions of this model's
heads); the page gives each grid its own tables and figure, as two folders did before
(:func:`write_page` still reads two: ``scaled_dir``).

Every number on the page is read from the run folders (``manifest.json``, ``baseline.csv``,
``summary.parquet``, ``significance.csv``); the pass/fail marks are computed here from the
Cognitive Mirrors figure's claim (Ma et al. 2025): at the claim's k, TopK's accuracy drop is >= 3x
the mean RandomK drop and TopK's 95% interval lies below RandomK's, with enough examples and
random draws to decide (``interp_heads.sweep.stats.too_few``). The figures beside the page
(``docs/figures/results_literal_k.svg``, ``results_scaled_k.svg``: the same figure as the run's
interactive page, as SVG through kaleido) are what a reader of the repository sees without the
run folders.
"""

from __future__ import annotations

import os
from pathlib import Path

from interp_heads.run import Run
from interp_heads.run.manifest import Manifest
from interp_heads.store.pages import read_page
from interp_heads.store.pages import write_page as write_file
from interp_heads.studies.base import STUDIES, TASKS_SHORT, Study, StudyRun
from interp_heads.studies.protocols import fraction_k, paper_k_text
from interp_heads.studies.seed_figure.tables import (
    CLAIM_RATIO,
    claim_rows,
    grid_table,
    md,
    setup_table,
)
from interp_heads.sweep import stats
from interp_heads.sweep.inference import holm
from interp_heads.sweep.verdict import error_rates, load_calibration

FIGURES = {"default": "results_literal_k", "scaled": "results_scaled_k"}  # docs/figures/<name>.svg
# Sections other make targets write between these lines, kept when make demo regenerates the page
SECTIONS = {
    "heads": (
        "<!-- begin: written by make heads (interp_heads.studies.heads); kept by make demo -->",
        "<!-- end: written by make heads -->",
    ),
    "sufficiency": (
        "<!-- begin: written by make sufficiency (interp_heads.studies.sufficiency); "
        "kept by make demo -->",
        "<!-- end: written by make sufficiency -->",
    ),
}


def section(text: str, name: str) -> str:
    """The section ``name`` (of :data:`SECTIONS`) of a results page, markers included ("" when
    absent)."""
    begin, end_line = SECTIONS[name]
    start, end = text.find(begin), text.find(end_line)
    return text[start : end + len(end_line)] if 0 <= start < end else ""


def with_section(text: str, name: str, block: str) -> str:
    """``text`` with its section ``name`` replaced by ``block`` (appended when it has none)."""
    old = section(text, name)
    if old:
        return text.replace(old, block)
    return text.rstrip("\n") + "\n\n" + block + "\n"


def load(run: Path) -> dict:
    folder = Run.at(run)
    return {
        "dir": run,
        "manifest": folder.need("manifest"),
        "baseline": folder.need("baseline"),
        "summary": folder.need("summary"),
        "sig": folder.need("significance"),
    }


def grid_views(r: dict) -> tuple[dict, dict | None]:
    """``(literal, scaled)``: the run restricted to each k grid of its config
    (``report.run.k_grids``); ``scaled`` is None for a run with one grid."""
    from interp_heads.report.run import k_grids

    grids = k_grids(r["manifest"])
    if "seed_figure_scaled" not in grids:
        return r, None

    def view(name: str) -> dict:
        ks = grids[name][1]
        keep = [0, *ks]
        return {
            **r,
            "manifest": Manifest.of(r["manifest"]).with_updates(ks=ks).to_dict(),
            "summary": r["summary"][r["summary"].k.isin(keep)],
            "sig": r["sig"][r["sig"].k.isin(keep)],
            "figure": name,
        }

    return view("seed_figure"), view("seed_figure_scaled")


def write_figures(runs: dict[str, dict], folder: Path) -> dict[str, Path]:
    """Each run's Cognitive Mirrors figure (as on its page) as ``folder/<FIGURES[key]>.svg``."""
    from interp_heads.figures.static import write_static
    from interp_heads.report import load_run, make_figures, page

    figs = {}
    for key, r in runs.items():
        drawn = make_figures(page.relabelled(page.current(load_run(r["dir"]))))
        name = r.get("figure", "seed_figure")
        if name in drawn:
            figs[FIGURES[key]] = drawn[name]
    write_static(figs, folder, ["svg"])
    return {key: folder / f"{FIGURES[key]}.svg" for key in runs if FIGURES[key] in figs}


def _figure(figures: dict[str, str], key: str, what: str) -> list[str]:
    """A markdown image line for ``figures[key]`` (a path relative to the page), when there is one."""
    return [f"![{what}]({figures[key]})", ""] if key in figures else []


def _n_heads(run: dict) -> int:
    """The run's model's heads (270 for SmolLM2 when its manifest does not say)."""
    model = Manifest.of(run.get("manifest")).model or {}
    return int(model.get("n_layers", 30)) * int(model.get("n_heads", 9))


def render(
    default: dict, scaled: dict | None, figures: dict[str, str] | None = None, notes: str = ""
) -> str:
    """The page: the claim's figures and verdicts, the hand-written ``notes`` (the reading of
    them), then setup and tables; ``figures``: ``{"default"|"scaled": image path relative to
    the page}``."""
    figures = figures or {}
    parts = [
        "# Results on SmolLM2-135M-Instruct",
        "",
        "Regenerated by `make demo` (`interp-heads study seed_figure`: `configs/seed_figure.toml` -> "
        "`runs/demo`, one run with both k grids, literal and scaled, then this page and its "
        "figures in `docs/figures/`). `make demo` leaves the "
        "interactive page in `runs/demo/index.html` (significance table, per-head heatmaps, the "
        "retrieval length x depth heatmap, every generation). All numbers were measured on the "
        "2-core CPU machine; nothing on this page is typed by hand.",
        "",
        "## The Cognitive Mirrors figure's claim at k = 32 (the paper's literal k)",
        "",
        paper_k_text(_n_heads(default)),
        "",
        "Claim: masking the TopK heads collapses the task while RandomK barely moves it; checked as TopK below "
        "RandomK with the Holm-adjusted p < 0.05 of the exact test with examples and RandomK draws as random "
        "factors, over this table's cells (`interp_heads.sweep.verdict`; the interval inverts the same test). "
        f"The Cognitive Mirrors figure's own reading, TopK's accuracy drop >= {CLAIM_RATIO:.0f}x the mean RandomK "
        "drop, is shown in brackets beside the ratio as a secondary reading; the last column gives the rule's "
        "measured false-positive rate and power (docs/calibration.md); "
        f"a verdict needs {stats.MIN_EXAMPLES} evaluated examples and {stats.MIN_DRAWS} random draws.",
        "",
        *_figure(
            figures,
            "default",
            "The Cognitive Mirrors figure on SmolLM2, literal k: "
            "score against masked heads, TopK solid, RandomK dashed, 95% bands",
        ),  # fmt: skip
        md(claim_rows(default, 32)),
        "",
    ]
    if scaled is not None:
        model = Manifest.of(scaled["manifest"]).model
        n_heads = model["n_layers"] * model["n_heads"]
        ks = Manifest.of(scaled["manifest"]).ks
        k8 = min(ks, key=lambda k: abs(k - fraction_k(n_heads)))  # studies.protocols
        parts += [
            f"## The same claim at the paper's *fraction* of heads (k = {k8}, {k8 / n_heads:.1%} of {n_heads})",
            "",
            *_figure(
                figures,
                "scaled",
                "The Cognitive Mirrors figure on SmolLM2, k scaled to "
                "the paper's fractions of heads",
            ),  # fmt: skip
            md(claim_rows(scaled, k8)),
            "",
        ]
    if notes:
        parts += [notes.strip("\n"), ""]
    parts += [
        "## Setup (literal k)",
        "",
        setup_table(default),
        "",
        "## Baseline (unmasked)",
        "",
        md(default["baseline"].round({"accuracy": 3})),
        "",
        "## Accuracy, mean [95% CI], literal k (`*`: TopK significantly different from RandomK, with enough examples and draws to say so)",
        "",
        md(grid_table(default, "accuracy")),
        "",
    ]
    metrics = [m for m in dict.fromkeys(default["summary"].metric) if m != "accuracy"]
    for m in metrics:
        label = default["summary"].loc[default["summary"].metric == m, "label"].iloc[0]
        parts += [f"## {label}, mean [95% CI], literal k", "", md(grid_table(default, m)), ""]
    if scaled is not None:
        parts += [
            "## Setup (scaled k)",
            "",
            setup_table(scaled),
            "",
            "## Accuracy, mean [95% CI], scaled k",
            "",
            md(grid_table(scaled, "accuracy")),
            "",
        ]
    parts += ["## Significance, every k (accuracy; TopK minus each random control)", ""]
    sig = default["sig"][default["sig"].metric == "accuracy"]
    sig = sig.assign(p_holm=holm(sig["p_value"]))  # this table's cells: one family
    cal = load_calibration()
    parts += [
        md(
            [
                {
                    "task": r.task,
                    "k": r.k,
                    "control": r.control,
                    "TopK - control [95% CI]": f"{r.diff:+.2f} [{r.diff_low:+.2f}, {r.diff_high:+.2f}]",
                    "p": stats.format_p(r.p_value)
                    if not stats.too_few(r.n_examples, r.n_draws)
                    else "",
                    "p (Holm)": stats.format_p(r.p_holm)
                    if not stats.too_few(r.n_examples, r.n_draws)
                    else "",
                    "verdict": stats.verdict(r),
                    "rule's error rates": error_rates(r.n_examples, r.n_draws, calibration=cal),
                    "drop ratio": stats.drops_text(r.top_drop, r.control_drop),
                    "n": f"{int(r.n_examples)} ex, {int(r.n_draws)} draws",
                }
                for r in sig.itertuples(index=False)
            ]
        ),
        "",
    ]
    return "\n".join(parts) + "\n"


def write_page(
    default_dir: Path, scaled_dir: Path | None, out: Path, notes: Path, figures: Path
) -> list[Path]:
    """docs/results.md (keeping its named sections) and its figures from the demo's run folder
    (and a second folder with the scaled k grid, if it ran apart); returns the files written."""
    default, scaled = load(default_dir), load(scaled_dir) if scaled_dir else None
    if scaled is None:
        default, scaled = grid_views(default)
    runs = {"default": default, **({"scaled": scaled} if scaled is not None else {})}
    images = write_figures(runs, figures)
    rel = {k: os.path.relpath(v.resolve(), out.resolve().parent) for k, v in images.items()}
    reading = read_page(notes)
    text = render(default, scaled, {k: Path(v).as_posix() for k, v in rel.items()}, reading)
    old = read_page(out)
    for kept in (section(old, name) for name in SECTIONS):
        if kept:
            text += "\n" + kept + "\n"
    write_file(out, text)
    return [out, *images.values()]


# --------------------------------------------------------------------------- the study
@STUDIES.register
class SeedFigure(Study):
    name = "seed_figure"
    summary = "TopK vs RandomK at the paper's k and its fractions (docs/results.md)"
    # small: 2026-12-07, shared machine (Study.minutes); full: alone on 2 cores, 2026-12-06 (8376635; 15.2 that morning)
    minutes = {"small": 2.5, "full": 14.6}

    def runs(self, size):
        # small: the page's baseline table reads every row answered (baseline "all"), so 72
        # rows a task, not 240: enough for the 24 ranked and 24 evaluated correct answers at
        # these tasks' ~75-80% accuracy
        small = {"tasks": TASKS_SHORT, "max_examples": 72, "n_eval": 24, "ks": [16, 32],
                 "scaled_ks": [], "baseline": "all"}  # fmt: skip
        return [StudyRun("demo", "configs/seed_figure.toml", small if size == "small" else {})]

    def write_pages(self, folders, docs):
        return write_page(
            folders["demo"], None, docs / "results.md", docs / "results_notes.md", docs / "figures"
        )
