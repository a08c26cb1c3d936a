"""The Cognitive Mirrors protocol beside the causal one: docs/compare.md and an HTML page.

    make compare   # interp-heads study compare: each config of the study's runs into
                   # runs/compare/<name>, then docs/compare.md and runs/compare/index.html

``seed`` is ``configs/cognitive_mirrors.toml`` (the Cognitive Mirrors protocol, on the four
built-in tasks in the study's prompt format); ``causal`` (``configs/compare/causal.toml``) is the
same tasks in their plain completion format, filtered to the correctly answered ones, under this
toolkit's protocol (``ablation_atp`` ranking, mean ablation at every position, first-line answers,
gold reference); the other three runs change one of the study's choices alone (positions
generated -> all, scale -> mean, the accuracy rule's references -> all gold). Each run is an ordinary
resumable run folder; this page needs no model: every number is read from them.

The page, figure first: both protocols' figures side by side (``figures.protocols``), one verdict
table (``compare.tables``), probe-vs-causal agreement, what each choice changes, and findings
written from those numbers (``compare.findings``). The generated part of docs/compare.md sits
between :data:`BEGIN` and :data:`END`; the hand-written text around it is kept.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pandas as pd

from interp_heads.figures.escape import md, md_frame
from interp_heads.run import Run
from interp_heads.run.manifest import Manifest
from interp_heads.store.pages import as_named, read_page
from interp_heads.store.pages import write_page as write_file
from interp_heads.studies.base import STUDIES, Study, StudyRun, repo_file
from interp_heads.studies.compare import tables as ct
from interp_heads.studies.compare.findings import findings

# run folder -> its config (``make compare`` runs each into runs/compare/<name>)
VARIANTS = {
    "seed": "configs/cognitive_mirrors.toml",
    "causal": "configs/compare/causal.toml",
    "positions_all": "configs/compare/positions_all.toml",
    "mean_ablation": "configs/compare/mean_ablation.toml",
    "gold_reference": "configs/compare/gold_reference.toml",
}
CHANGED = {
    "seed": "the study's protocol (configs/cognitive_mirrors.toml)",
    "causal": "the causal protocol (ablation_atp ranking, mean ablation at all positions, "
    "first line of 6 tokens, gold reference)",
    "positions_all": "the mask at every position (positions = all)",
    "mean_ablation": "mean ablation instead of the 1e-4 scale",
    "gold_reference": "every part of the accuracy rule against the gold answer "
    "(cognitive_mirrors_accuracy_gold; no COMET)",
}
# what the three one-choice runs change beside their choice, to fit the budget (docs/compare.md)
VARIANT_BUDGET = {"ranking", "n_eval", "elbow", "selections", "seeds"}
PROTOCOLS = {"seed": "the study's protocol", "causal": "the causal protocol"}
FIGURE = "compare_protocols"  # docs/figures/<FIGURE>.svg
BEGIN = "<!-- begin: written by make compare (interp_heads.studies.compare); edit around it -->"
END = "<!-- end: written by make compare -->"


def load(folder: Path) -> dict:
    """A run folder's manifest, summary, significance and ranking tables."""
    run = Run.at(folder)
    summary = run.need(
        "summary" if os.path.lexists(run.folder.summary_parquet) else "summary_table"
    )
    sig = run.significance
    return {
        "manifest": run.need("manifest"),
        "summary": summary,
        "sig": pd.DataFrame() if sig is None else sig,  # absent, or empty: no TopK here
        "ranking": run.ranking,
    }


def load_runs(out: Path) -> dict[str, dict]:
    return {n: load(out / n) for n in VARIANTS if (out / n / "summary.csv").exists()}


def sections(runs: dict[str, dict]) -> list[dict]:
    """The page after its figure: ``{"title", "note", "table" or "items"}`` per section."""
    verdicts = {n: ct.verdict_frame(r, n) for n, r in runs.items()}
    page = [v for v in verdicts.values() if len(v)]  # the page's cells: one Holm family
    page = ct.decide(pd.concat(page, ignore_index=True)) if page else pd.DataFrame()
    verdicts = {n: page[page.protocol == n] if len(page) else v for n, v in verdicts.items()}
    both = [verdicts[n] for n in PROTOCOLS if n in verdicts]
    verdict = pd.concat(both, ignore_index=True) if both else pd.DataFrame()
    agree = None
    if "seed" in runs and "causal" in runs and runs["causal"]["ranking"] is not None:
        agree = ct.agreement(runs["seed"]["ranking"], runs["causal"]["ranking"], [8, 16, 32])
    choices = ct.choices_frame(verdicts, CHANGED)
    out = []
    if len(verdict):
        out.append({
            "title": "Does TopK collapse the task against RandomK?",
            "note": "Per task and protocol, at the task's elbow k (the study's find_elbow_point "
            f"on each run's own ranking) and at k = {ct.FIXED_K}, on each protocol's accuracy "
            "metric: the means, TopK's drop from the unmasked score over RandomK's (drop ratio), "
            "TopK minus RandomK with its 95% interval and the two-sided p of the exact test "
            "with examples and RandomK draws as random factors (the interval inverts that test: "
            "it holds 0 exactly when p >= 0.05), its Holm adjustment over every verdict cell of "
            "this page's runs, the smallest difference detectable with 80% power "
            "(interp_heads.sweep.stats; blank for runs made before it), the examples and draws. "
            "Yes: TopK below RandomK with Holm p < 0.05 (interp_heads.sweep.verdict); the drop "
            f"ratio's {ct.CLAIM_RATIO:g}x (the study's claim) is a secondary reading in brackets; "
            f"a verdict needs {ct.stats.MIN_EXAMPLES} examples and {ct.stats.MIN_DRAWS} draws. "
            "The last column: the rule's false-positive rate and power measured on null and "
            "planted replicates at the cell's n (docs/calibration.md).",
            "table": ct.verdict_table(verdict),
        })  # fmt: skip
    if agree is not None:
        out.append({
            "title": "Does the probe's ranking agree with the causal ranking?",
            "note": "Spearman of the two rankings' ranks over all heads, and the share of the "
            "top k heads they share, per task (probe: `seed`; causal: `ablation_atp` of `causal`).",
            "table": agree,
        })  # fmt: skip
    if len(choices):
        out.append({
            "title": "What each of the study's choices changes",
            "note": "Each run's accuracy metric, averaged over its tasks: unmasked, TopK and "
            f"RandomK at k = {ct.FIXED_K}, TopK minus RandomK there and at the elbow k, and in "
            "how many tasks TopK collapses the task (as in the verdict table).",
            "table": choices,
        })  # fmt: skip
    if len(verdict):  # the answer first: right after the verdict table it speaks of
        out.insert(1, {"title": "Findings", "note": "Written by the page generator from the "
                       "verdict table above and the tables below.",
                       "items": findings(verdict, agree, choices, PROTOCOLS)})  # fmt: skip
    return out


def runs_items(runs: dict[str, dict]) -> list[str]:
    """One line per run: what it is, whether it has numbers yet, and a probe's held-out accuracy
    with what its labels are (``report.probe_note``)."""
    from interp_heads.report.probe_note import probe_note

    items = []
    for n in VARIANTS:
        r = runs.get(n)
        if r is None:
            items.append(f"`{n}`: {CHANGED[n]}; not run yet (no numbers)")
            continue
        m = Manifest.of(r["manifest"])
        elbow = m.elbow_k or {}
        k = ", ".join(f"{md(t)} {md(v)}" for t, v in elbow.items())
        note = probe_note(m.probe, len(m.data or elbow))
        items.append(f"`{n}`: {CHANGED[n]}" + (f"; elbow k: {k}" if k else "")
                     + (f". {note}" if note else ""))  # fmt: skip
    return items


def protocol_lines() -> list[str]:
    """What opens the page: the two protocols, once defined (``studies.protocols``, as
    docs/spec_curve.md states them), and what the two pages run differently."""
    from interp_heads.studies.protocols import definition_lines, page_differences, paper_k_text
    from interp_heads.studies.spec_curve import COMMON, OPTIONS, SIZES

    return ["## The two protocols, and what docs/spec_curve.md runs differently", "",
            *definition_lines(), "", *page_differences(SIZES, COMMON, [o["k"] for o in OPTIONS["k"].values()]), "",
            paper_k_text(),
            ""]  # fmt: skip


def markdown(runs: dict[str, dict], out: Path, image: str | None) -> str:
    """The generated block of docs/compare.md (markers included): the protocols first."""
    parts = [BEGIN, "", *protocol_lines()]
    if image:
        parts += [f"![The study's protocol (left) and the causal one (right)]({image})", ""]
    elif any(n in runs for n in PROTOCOLS):
        parts += [
            f"(Figure: {md(as_named(out))}/index.html; the static image needs kaleido and a Chromium.)"
        ]
        parts += [""]
    else:
        parts += ["(No figure yet: neither protocol has been run.)", ""]
    for sec in sections(runs):
        parts += [f"## {sec['title']}", "", sec["note"], ""]
        if "table" in sec:
            parts += [ct.md(md_frame(sec["table"])), ""]
        parts += [f"- {s}" for s in sec.get("items", [])] + ([""] if sec.get("items") else [])
    parts += ["## Runs", "", f"Read from the run folders under {md(as_named(out))}:", ""]
    parts += [f"- {s}" for s in runs_items(runs)] + ["", END]
    return "\n".join(parts)


def figure(runs: dict[str, dict]):
    """Both protocols' figures side by side (None without either run)."""
    from interp_heads.figures.protocols import plot_protocols

    have = {PROTOCOLS[n]: runs[n]["summary"] for n in PROTOCOLS if n in runs}
    if not have:
        return None
    metrics = {
        PROTOCOLS[n]: list(dict.fromkeys(runs[n]["summary"].metric)) for n in PROTOCOLS if n in runs
    }
    return plot_protocols(have, metrics)


def with_block(text: str, block: str) -> str:
    """``text`` (the page as it is) with its generated block replaced by ``block``; a page
    without one gets it appended."""
    start, end = text.find(BEGIN), text.find(END)
    if 0 <= start < end:
        return text[:start] + block + text[end + len(END) :]
    return (text.rstrip("\n") + "\n\n" if text.strip() else "") + block + "\n"


def write_pages(out: Path, page: Path, html: Path, figures: Path | None) -> list[Path]:
    """docs/compare.md (its generated block), the HTML page and the static figure."""
    from interp_heads.studies.compare.html import html_page

    runs = load_runs(out)
    fig, image, written = figure(runs), None, []
    if fig is not None and figures is not None:
        from interp_heads.figures.static import StaticExportError, write_static

        try:
            written += write_static({FIGURE: fig}, figures, ["svg"])
            image = Path(os.path.relpath(written[-1].resolve(), page.resolve().parent)).as_posix()
        except StaticExportError as exc:
            print(f"no static figure: {exc}")
    old = read_page(page)
    write_file(page, with_block(old, markdown(runs, out, image)))
    html.parent.mkdir(parents=True, exist_ok=True)
    written += html_page(html, fig, sections(runs), runs_items(runs))
    return [page, *written]


# --------------------------------------------------------------------------- the study
COMPARE_VARIANTS = ["causal", "positions_all", "mean_ablation", "gold_reference"]


SMALL = {"max_examples": 40, "n_rank": 8, "n_eval": 12, "ks": [32]}  # 10 examples, 5 draws decide
CHEAP = ("knowledge_recall", "math_calculation")  # the small size's tasks


def small_changes(config: str) -> dict:
    """The small size of a run of ``config``: its two cheap tasks (in the config's own format),
    8 rows to rank (the probe's training rows) and 12 to mask, at k = 32 and the elbow."""
    from interp_heads.store.readback import read_plain

    tasks = tomllib.loads(read_plain(repo_file(config)).decode("utf-8"))["tasks"]
    return {**SMALL, "tasks": [t for t in tasks if Path(t).stem in CHEAP]}


@STUDIES.register
class Compare(Study):
    name = "compare"
    summary = "the Cognitive Mirrors protocol beside the causal one (docs/compare.md)"
    # alone on 2 cores, 2026-12-06 (b3743ab); 30.4 in a slower hour that day (docs/compare.md)
    # small (2 runs): 2026-12-07, shared machine (Study.minutes); full as above
    minutes: dict[str, float] = {"small": 4.8, "full": 20.2}

    def runs(self, size):
        # small: the two protocols only (the page leaves out the one-choice runs it lacks)
        variants = COMPARE_VARIANTS[:1] if size == "small" else COMPARE_VARIANTS
        configs = {"compare/seed": "configs/cognitive_mirrors.toml",
                   **{f"compare/{v}": f"configs/compare/{v}.toml" for v in variants}}  # fmt: skip
        seed, *variants = [
            StudyRun(name, path, small_changes(path) if size == "small" else {})
            for name, path in configs.items()
        ]
        for run in variants[1:]:  # the one-choice runs read the seed run's probe ranking
            run.changes["ranking"] = "{runs}/compare/seed"
        return [seed, *variants]

    def write_pages(self, folders, docs):
        out = Path(folders["compare/seed"]).parent
        return write_pages(out, docs / "compare.md", out / "index.html", docs / "figures")
