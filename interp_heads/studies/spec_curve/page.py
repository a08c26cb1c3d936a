"""docs/spec_curve.md: the specification curve's answer first (the verdict at each end, which
single choice flips it), then every cell, from ``studies.spec_curve``'s frame. Every sentence of
the findings is generated from the numbers."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pandas as pd

from interp_heads.figures.escape import md, num_or_blank
from interp_heads.store.pages import page_folder
from interp_heads.store.pages import write_page as write_file
from interp_heads.sweep import verdict as rule

FIGURE = "spec_curve"  # docs/figures/<FIGURE>.svg
PROTOCOL = {
    "study": "the study's protocol",
    "causal": "the causal protocol",
    "default": "the default protocol (mean ablation at every position, accuracy)",
}


def protocol(end: str) -> str:
    return PROTOCOL.get(end, f"the {end} protocol")


def collapses(verdict: str) -> bool:
    """Whether a cell's verdict is a decided yes (``sweep.verdict.is_yes``)."""
    return rule.is_yes(verdict)


def decide_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """Every cell's verdict by ``sweep.verdict``'s rule, Holm over all of the frame's cells (the
    page's family); an ``undecided`` column passes its reasons. ``p_holm`` joins the frame."""
    if frame.empty:
        return frame
    return rule.decide(frame, diff="effect", p="p", n="n", draws="draws", out="verdict")


def decided(verdict: str) -> bool:
    """Whether a cell's verdict is a plain yes or no: an undecided cell (its metric cannot score
    it, nothing to remove, too few examples or draws) is never a flip nor the largest change."""
    return rule.is_decided(verdict)


def _mark(row) -> str:
    word = "yes" if collapses(row.verdict) else ("no" if row.verdict == "no" else "undecided")
    return f"{word} ({row.effect:+.2f})"


def end_table(frame: pd.DataFrame, tasks: list[str], names=("study", "causal")) -> list[str]:
    """Each end's verdict per task: does TopK collapse the task against RandomK?"""
    out = ["| protocol | " + " | ".join(tasks) + " |", "|---" * (len(tasks) + 1) + "|"]
    for end in names:
        row = frame[(frame.end == end) & (frame.flipped == "")].set_index("task")
        out.append(f"| {protocol(end)} | " + " | ".join(
            _mark(row.loc[t]) if t in row.index else "-" for t in tasks) + " |")  # fmt: skip
    return out


def flip_rows(frame: pd.DataFrame, ends: tuple, names=("study", "causal")) -> pd.DataFrame:
    """One row per end and flipped cell: the choice, its new option, and per task the verdict,
    whether it differs from the end's, and the change in effect."""
    rows = []
    for end_name, end in zip(names, ends, strict=True):
        base = frame[(frame.end == end_name) & (frame.flipped == "")].set_index("task")
        for _, cell in frame[(frame.end == end_name) & (frame.flipped != "")].groupby(
            ["flipped", *[c for c in ends[0]]], sort=False
        ):
            choice = cell.flipped.iloc[0]
            for r in cell.itertuples():
                if r.task not in base.index:
                    continue
                b = base.loc[r.task]
                both = decided(r.verdict) and decided(b.verdict)
                rows.append({
                    "end": end_name, "choice": choice,
                    "change": f"{end[choice]} -> {getattr(r, choice)}", "task": r.task,
                    "verdict": _mark(r), "decided": both, "topk": r.topk,
                    "flips": both and collapses(r.verdict) != collapses(b.verdict),
                    "delta": r.effect - b.effect,
                })  # fmt: skip
    return pd.DataFrame(rows)


def flip_table(flips: pd.DataFrame, tasks: list[str]) -> list[str]:
    out = ["| from | choice flipped | " + " | ".join(tasks) + " | flips the verdict on |",
           "|---" * (len(tasks) + 3) + "|"]  # fmt: skip
    for (end, choice, change), g in flips.groupby(["end", "choice", "change"], sort=False):
        g = g.set_index("task")
        cells = [
            (f"**{g.loc[t, 'verdict']}**" if g.loc[t, "flips"] else g.loc[t, "verdict"])
            if t in g.index else "-"
            for t in tasks
        ]  # fmt: skip
        flipped = [t for t in tasks if t in g.index and g.loc[t, "flips"]]
        out.append(f"| {protocol(end)} | {choice}: {change} | " + " | ".join(cells)
                   + f" | {len(flipped)} of {len(g)} |")  # fmt: skip
    return out


def findings(flips: pd.DataFrame, frame: pd.DataFrame, names=("study", "causal")) -> list[str]:
    """Sentences from the numbers: each end's verdict count, and which single choices flip it."""
    out = []
    for end in names:
        base = frame[(frame.end == end) & (frame.flipped == "")]
        yes = int(base.verdict.map(collapses).sum())
        mine = flips[flips.end == end] if len(flips) else flips
        by = mine[mine.flips].groupby(["choice", "change"], sort=False).task.apply(list)
        said = f"Under {protocol(end)} TopK collapses {yes} of {len(base)} tasks against RandomK"
        undecided = len(base) - int(base.verdict.map(decided).sum())
        said += f" ({undecided} of them undecided)." if undecided else "."
        if by.empty:
            said += f" No single choice flips that verdict on any task from {protocol(end)}."
        else:
            said += (" One choice flips it" if len(by) == 1 else
                     f" {len(by)} choices flip it, each alone") + ": " + "; ".join(
                f"{choice} {change} on {', '.join(tasks)}"
                for (choice, change), tasks in by.items()) + "."  # fmt: skip
        judged = mine[mine.decided] if "decided" in mine else mine
        if len(judged):
            top = judged.loc[judged.delta.abs().idxmax()]
            said += (f" The largest change in TopK - RandomK between decided cells is "
                     f"{top.delta:+.2f} ({top.choice} {top.change}, {top.task}).")  # fmt: skip
        said += _floor(mine)
        out.append("- " + said)
    return out + caveats(frame)


def _floor(mine: pd.DataFrame) -> str:
    """Where TopK is already 0.00 in most decided cells one choice from an end, the verdict turns
    on RandomK's drop alone: a verdict no choice flips is then a floor, not robustness. Undecided
    cells do not count: they say nothing either way."""
    if "decided" in mine:
        mine = mine[mine.decided]
    if "topk" not in mine or not len(mine):
        return ""
    zero = int((mine.topk.round(2) == 0).sum())
    said = f" TopK is 0.00 in {zero} of {len(mine)} decided cells one choice from it"
    if 2 * zero > len(mine):
        return said + (": it cannot fall further there, so a verdict that holds across them "
                       "is a floor effect, not robustness.")  # fmt: skip
    return said + "."


def caveats(frame: pd.DataFrame) -> list[str]:
    """What the numbers cannot say, written from the frame: undecided cells and why, scope
    ``generated`` in the plain format, and cells too small to be a headline."""
    from interp_heads.sweep.stats import MIN_EXAMPLES

    out = []
    undecided = frame[frame.verdict.str.startswith("undecided: ")]  # a reason given
    for why, g in undecided.groupby(undecided.verdict.str[len("undecided: ") :], sort=False):
        out.append(f"- Undecided in {len(g)} cell-task pairs: {why}. Such a cell is never a flip "
                   "nor the largest change.")  # fmt: skip
    if {"scope", "format"} <= set(frame) and (
        (frame.scope == "generated") & (frame.format == "plain")
    ).any():
        out.append("- Scope `generated` in the plain format is blind by construction: the first "
                   "generated token comes from the unmasked prompt pass, and in the plain format "
                   "that token is the answer (or its start), so those cells can hardly move.")  # fmt: skip
    small = frame[frame.n < MIN_EXAMPLES] if "n" in frame else frame.iloc[:0]
    if len(small):
        out.append(f"- {len(small)} cell-task pairs have fewer than {MIN_EXAMPLES} examples "
                   f"(smallest n = {int(small.n.min())}): never a headline, a flip or the "
                   "largest change.")  # fmt: skip
    return out


def cells_table(frame: pd.DataFrame) -> list[str]:
    from interp_heads.figures.spec_curve import cell_id

    cols = ["cell", "task", "k", "metric", "unmasked", "TopK", "RandomK", "TopK - RandomK [95% CI]",
            "p", "Holm p", "n", "draws", "detectable", "collapses?", "3x ratio",
            "rule's error rates"]  # fmt: skip
    out = ["| " + " | ".join(cols) + " |", "|---" * len(cols) + "|"]
    frame = decide_cells(frame)
    adj, cal = frame.p_holm, rule.load_calibration()
    for i, r in frame.iterrows():
        out.append("| " + " | ".join([
            cell_id(r), r.task, str(r.k_heads), r.metric, f"{r.baseline:.2f}", f"{r.topk:.2f}",
            f"{r.randomk:.2f}", f"{r.effect:+.2f} [{r.effect_low:+.2f}, {r.effect_high:+.2f}]",
            f"{r.p:.3f}", f"{adj[i]:.3f}", str(r.n), str(r.draws), num_or_blank(r.mde), r.verdict,
            rule.ratio_reading(r.baseline - r.topk, r.baseline - r.randomk),
            rule.error_rates(r.n, r.draws, calibration=cal),
        ]) + " |")  # fmt: skip
    return out


INTRO = (
    "the seed claim (TopK collapses a task against RandomK: TopK below RandomK with the Holm "
    "p < 0.05 of the exact test with examples and RandomK draws as random factors, Holm over "
    "every cell of this page; the 3x drop ratio is a secondary reading) in every cell one choice "
    "away from the Cognitive Mirrors protocol or from the causal one, and in the full factorial "
    "of ranking, intervention, scope, RandomK pool and k around each "
    "(`interp_heads/studies/spec_curve/`)."
)


def _svg(fig, name: str, docs: Path, page: Path, written: list) -> str | None:
    """Write ``fig`` as ``docs/figures/<name>.svg``; its path from the page (None: no static
    export here)."""
    try:
        from interp_heads.figures.static import write_static

        written += write_static({name: fig}, docs / "figures", ["svg"])
        return Path(os.path.relpath(written[-1].resolve(), page.resolve().parent)).as_posix()
    except Exception as exc:  # noqa: BLE001 (no kaleido or Chromium: the page without it)
        print(f"no static figure: {str(exc).splitlines()[0] if str(exc) else exc}")
        return None


def write_page(
    frame: pd.DataFrame,
    options: dict,
    ends: tuple,
    docs: Path,
    *,
    names=("study", "causal"),
    stem: str = FIGURE,
    title: str = "Which choice decides the verdict",
    intro: str = INTRO,
    protocols: list[str] = (),
    factorial: tuple[str, ...] = (),
) -> list[Path]:
    """``docs/<stem>.md``, its figure ``docs/figures/<stem>.svg`` and, with factorial rows
    (``design = "factorial"``), the multiverse ``docs/figures/<stem>_multiverse.svg``; returns
    the files written. ``protocols``: the lines that open the page (each protocol's one
    definition and what the pages run differently, ``studies.protocols``)."""
    from interp_heads.figures.spec_curve import plot_spec_curve
    from interp_heads.studies.spec_curve import factorial as fac

    page_folder(docs)
    frame = decide_cells(frame)
    page, written = docs / f"{stem}.md", []
    frame = frame.assign(task=frame.task.map(md))  # a task name is text on the page, not markup
    multi = frame[frame.design == "factorial"] if "design" in frame else frame.iloc[:0]
    frame = frame[frame.design != "factorial"] if "design" in frame else frame
    tasks = list(dict.fromkeys(frame.task))
    flips = flip_rows(frame, ends, names)
    fig = plot_spec_curve(frame, {c: list(o) for c, o in options.items()})
    image = _svg(fig, stem, docs, page, written)
    multiverse = (_svg(fac.figure(multi, factorial, options), f"{stem}_{fac.FIGURE}", docs, page,
                       written) if len(multi) else None)  # fmt: skip
    text = [
        f"# {title}",
        "",
        f"Generated by `interp-heads study` on {dt.date.today()}: {intro}",
        "",
        *([*protocols, ""] if protocols else []),
        *([f"![specification curve]({image})", ""] if image else []),
        "## The answer",
        "",
        *end_table(frame, tasks, names),
        "",
        *findings(flips, frame, names),
        "",
        "Each single choice flipped from each end (bold: the verdict differs from the end's):",
        "",
        *(flip_table(flips, tasks) if len(flips) else ["(no flipped cells)"]),
        "",
        *fac.section(multi, factorial, multiverse, names),
        "## Every cell",
        "",
        "p: the exact test with examples and RandomK draws as random factors "
        "(interp_heads.sweep.exact; the interval inverts it); Holm p: adjusted over every row of "
        "this table, and what decides; n: evaluated examples; draws: RandomK draws; detectable: "
        "the smallest TopK - RandomK the cell detects at 80% power (docs/method.md); 3x ratio: "
        "the seed claim's drop ratio, a secondary reading; rule's error rates: the verdict "
        "rule's false-positive rate and power at the cell's n (docs/calibration.md).",
        "",
        *cells_table(frame),
        "",
        *(
            [
                "## Every cell of the factorial",
                "",
                "As above; Holm p over every cell of this page.",
                "",
                *cells_table(multi),
                "",
            ]
            if len(multi)
            else []
        ),  # fmt: skip
    ]
    write_file(page, "\n".join(text) + "\n")
    return [page, *written]
