"""The "How many heads" section of docs/results.md, from the run folder of ``make sufficiency``.

    interp-heads study sufficiency   # make sufficiency: configs/sufficiency.toml into runs/sufficiency

Every number is read from the run's ``heads/sufficiency*.csv`` and ``manifest.json`` (no model
needed): the plain-words verdict per task (are the TopK heads that are necessary also
sufficient?), the minimal head set, CPR / CMD / necessity area per metric beside random kept sets,
and the faithfulness figure (``docs/figures/sufficiency_faithfulness.svg``). The section sits
between the markers of ``studies.seed_figure``, which keeps it when ``make demo`` regenerates the
page.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from interp_heads.analysis.sufficiency import NECESSARY, THRESHOLD
from interp_heads.analysis.sufficient_set import FOUND, NOT_VERIFIED, OVER
from interp_heads.figures.escape import md as md_text
from interp_heads.figures.escape import md_code, md_frame, md_link, num_or_blank
from interp_heads.report.sufficiency_section import (
    CMD_LINE,
    CPR_LINE,
    interval_cell,
    minimal_cell,
    plain_verdicts,
)
from interp_heads.run.manifest import Manifest
from interp_heads.store.pages import as_named, read_page
from interp_heads.store.pages import write_page as write_file
from interp_heads.studies.base import STUDIES, TASKS_SHORT, Study, StudyRun, run_minutes
from interp_heads.studies.seed_figure import SECTIONS, with_section
from interp_heads.studies.seed_figure.tables import md

STATUSES = (FOUND, NOT_VERIFIED, OVER)  # the tool's words; any other status is shown as text
FIGURE = "sufficiency_faithfulness"  # docs/figures/<name>.svg


def _cell(row, spec: str = ".2f") -> str:
    """``value [low, high]`` of a summary row, ``f [f_low, f_high]`` of a curve row."""
    if row is None:
        return "undefined"
    if "value" in row:
        return interval_cell(row["value"], row["low"], row["high"], spec)
    return interval_cell(row["f"], row["f_low"], row["f_high"], spec)


def _pick(frame: pd.DataFrame, **where):
    sub = frame
    for key, value in where.items():
        sub = sub[sub[key] == value]
    return None if sub.empty else sub.iloc[0].to_dict()


SEARCHED_PAGE = (
    "sufficient_sets.md"  # where the searched sets are (interp-heads study sufficient_sets)
)


def minimal_table(summary: pd.DataFrame, curves: pd.DataFrame, method: str = "?",
                  searched: pd.DataFrame | None = None) -> list[dict]:  # fmt: skip
    """Per task: the unmasked accuracy and the minimal head set (ranking and random kept sets),
    the ranking (``method``) whose prefixes were kept, and the searched set: the run's own
    (``searched``: its ``sufficient_sets`` table) or, where no kept set on the grid below every
    head reached the target, a pointer to the searched sets' page. A set is named only when
    one was found below every head."""
    rows = []
    acc = curves[curves.metric == "accuracy"]
    for task in dict.fromkeys(acc.task):
        first = _pick(acc, task=task, curve="ranking")
        ranking = _pick(summary, task=task, metric="accuracy", curve="ranking", measure="minimal_k")
        random_ = _pick(summary, task=task, metric="accuracy", curve="random", measure="minimal_k")
        none = not any(_found_row(r) for r in (ranking, random_))
        rows.append({
            "task": task, "ranking": md_code(method), "unmasked accuracy": num_or_blank(first["full"]),
            "all heads ablated": num_or_blank(first["empty"]),
            "minimal k, ranking [95% CI]": minimal_cell(ranking) if ranking else "undefined",
            "minimal k, random kept": minimal_cell(random_) if random_ else "undefined",
            "its heads, most important first": _heads(ranking) if _found_row(ranking) else "",
            "searched set": _searched(searched, task, none),
        })  # fmt: skip
    return rows


def _found_row(row) -> bool:
    """Whether a minimal k row names a set below every head."""
    if not row:
        return False
    found = row.get("found", True)
    return True if found is None or found != found else bool(found)


def _searched(searched: pd.DataFrame | None, task: str, none: bool) -> str:
    """The run's own searched set of ``task`` (size and held-out status), else where the
    searched sets are when no kept set on the grid reached the target."""
    if searched is not None and len(searched) and task in set(searched.task):
        r = searched[(searched.task == task) & (searched.set == "found")].iloc[0]
        status = r.get("status") if isinstance(r.get("status"), str) else "status not checked"
        status = status if status in (*STATUSES, "status not checked") else md_text(status)
        return f"{int(r.k)} of {int(r.n_total)} heads ({status} held out; this run's search)"
    if none:
        return (f"no kept set on the grid reaches the target: see the searched set "
                f"([{SEARCHED_PAGE}]({SEARCHED_PAGE}))")  # fmt: skip
    return ""


def measures_table(summary: pd.DataFrame, curves: pd.DataFrame, k: int) -> list[dict]:
    """Per task and metric: CPR, CMD and necessity area, and f at the run's k, kept and masked."""
    rows = []
    for (task, metric), _ in curves.groupby(["task", "metric"], sort=False):

        def s(curve, measure, task=task, metric=metric):
            return _pick(summary, task=task, metric=metric, curve=curve, measure=measure)

        def c(curve, task=task, metric=metric):
            return _pick(curves, task=task, metric=metric, curve=curve, k=k)

        rows.append({
            "task": task, "metric": md_text(metric),
            "CPR ranking": _cell(s("ranking", "cpr")), "CPR random": _cell(s("random", "cpr")),
            "CMD ranking": _cell(s("ranking", "cmd")),
            "necessity area": _cell(s("necessity", "necessity_area")),
            f"f, top {k} kept": _cell(c("ranking")), f"f, {k} random kept": _cell(c("random")),
            f"f, top {k} masked": _cell(c("necessity")),
        })  # fmt: skip
    return rows


def _minutes(manifest: Manifest | dict) -> str:
    (total, calls), (step, _) = run_minutes(manifest), run_minutes(manifest, "sufficiency")
    if not total:
        return ""
    over = f" over {calls} invocations" if calls > 1 else ""
    out = f" The run took {total:.1f} min{over} on the 2-core CPU machine"
    return out + (f", {step:.1f} of them in the kept-set sweep." if step else ".")


def _heads(row, shown: int = 16) -> str:
    """The minimal set's heads, the first ``shown`` of a longer one."""
    named = (row or {}).get("heads")
    heads = [h for h in named.split(",") if h] if isinstance(named, str) else []
    heads = [md_text(h) for h in heads]  # labels read from a CSV: text, never markup
    if len(heads) <= shown:
        return ", ".join(heads)
    return ", ".join(heads[:shown]) + f", ... ({len(heads)} heads)"


def render(run_dir: Path, run: dict, figure: str | None) -> str:
    """The section, markers included, from a loaded run (``report.run.load_run``); ``figure``:
    the faithfulness SVG's path from the page."""
    summary, curves = run["sufficiency"], run["sufficiency_curves"]
    verdicts = run.get("sufficiency_verdicts")
    verdicts = pd.DataFrame() if verdicts is None else verdicts
    manifest = Manifest.of(run.get("manifest"))
    cfg, meta = manifest.config or {}, manifest.sufficiency or {}
    run_ks = sorted({int(k) for k in curves.k[curves.run_k.astype(bool)]}) or [0]
    k = run_ks[-1]
    n_eval = int(curves.n_examples.max()) if len(curves) else 0
    begin, end = SECTIONS["sufficiency"]
    parts = [
        begin,
        "## How many heads each task needs (from `make sufficiency`)",
        "",
        f"Regenerated by `make sufficiency` (`configs/sufficiency.toml` -> {md_code(as_named(run_dir).as_posix())}, "
        "then `interp-heads study sufficiency` writes this section); every number is read from "
        f"the run folder. Each task's heads are ranked by {md_code(cfg.get('attribution', '?'))}; "
        f"on {n_eval} held-out examples per task the ranking's top k heads are kept and every "
        f"other head is {md_text(cfg.get('ablation', 'mean'))}-ablated, beside k random heads "
        f"kept ({md_text(meta.get('seeds', '?'))} draws) and the top k masked, at kept k = "
        f"{md_text(', '.join(map(str, meta.get('ks', []))))} (MIB's fractions of the heads and the "
        f"run's k). f = (m(C) - m(empty)) / (m(N) - m(empty)); 95% bootstrap intervals over "
        f"examples (and draws).{_minutes(manifest)}",
        "",
    ]
    if figure:
        parts += [f"![Faithfulness vs share of heads kept]({md_link(figure)})", ""]
    if len(verdicts):
        parts += [
            f"Necessary: masking the top {k} leaves at most {NECESSARY} of the gap between the "
            f"all-ablated and the unmasked model; sufficient: keeping only them reaches "
            f"{THRESHOLD:.0%} of the unmasked accuracy.",
            "",
            *(f"- {md_text(s)}" for s in verdicts.sentence),
            "",
        ]
    parts += [f"### Minimal head set ({THRESHOLD:.0%} of the unmasked accuracy)", ""]
    method = str(cfg.get("attribution", "?"))
    parts += [
        f"The minimal k is read on the kept grid of the {md_code(method)} ranking's prefixes; keeping "
        "every head masks nothing, so where only every head reached the target the table says "
        "which kept sets were tried instead, names no heads, and points to the searched set "
        f"(`interp-heads study sufficient_sets`, {SEARCHED_PAGE}: heads removed with patience "
        "and a 1-minimality pass, not read off one ranking's prefixes).",
        "",
        md(minimal_table(summary, curves, method, run.get("sufficient_sets"))),
        "",
        *(f"- {s}" for s in plain_verdicts(md_frame(summary))),  # its task and metric: text
        "",
        f"- {CPR_LINE}",
        f"- {CMD_LINE}",
        "",
    ]
    parts += [
        "### CPR, CMD and necessity area per metric",
        "",
        md(measures_table(summary, curves, k)),
    ]
    return "\n".join([*parts, end])


def write_figure(curves: pd.DataFrame, folder: Path) -> Path | None:
    """The faithfulness figure as SVG (None, said on stderr, when no static export is possible)."""
    import sys

    from interp_heads.figures.static import StaticExportError, write_static
    from interp_heads.figures.sufficiency import plot_faithfulness

    try:
        return write_static({FIGURE: plot_faithfulness(curves)}, folder, ["svg"])[0]
    except StaticExportError as exc:
        print(f"note: no faithfulness figure on the page ({exc})", file=sys.stderr)
        return None


def write_section(run_dir: Path, results: Path, figures: Path) -> list[Path]:
    """The "How many heads" section of docs/results.md and its figure from the run folder."""
    from interp_heads.report.run import load_run

    run = load_run(run_dir) if run_dir.is_dir() else {}
    if run.get("sufficiency") is None or run.get("sufficiency_curves") is None:
        raise SystemExit(
            f"error: {run_dir} has no heads/sufficiency.csv: run it with sufficiency = true "
            "(make sufficiency)"
        )
    image = write_figure(run["sufficiency_curves"], figures)
    rel = None
    if image is not None:
        rel = Path(os.path.relpath(image.resolve(), results.resolve().parent)).as_posix()
    text = read_page(results)
    block = render(run_dir, run, rel)
    write_file(results, with_section(text, "sufficiency", block))
    print(f"wrote the make sufficiency section of {results}")
    return [results] + ([image] if image is not None else [])


# --------------------------------------------------------------------------- the study
@STUDIES.register
class Sufficiency(Study):
    name = "sufficiency"
    summary = "how many heads each task needs: TopK kept, the rest ablated (docs/results.md)"
    # small: 2026-12-07, shared machine (Study.minutes); full: on 2 cores, 2026-12-02
    minutes = {"small": 3.8, "full": 14.7}

    def runs(self, size):
        # small: the cheap tasks and one random kept set per k (the
        # conditions, not the rows, are what the run costs)
        small = {"tasks": TASKS_SHORT, "sufficiency_seeds": 1} if size == "small" else {}
        return [StudyRun("sufficiency", "configs/sufficiency.toml", small)]

    def write_pages(self, folders, docs):
        return write_section(folders["sufficiency"], docs / "results.md", docs / "figures")
