"""docs/spec_curve.md: the specification curve's answer first (the verdict at each end, which
single choice flips it), then every cell, from ``studies.spec_curve``'s frame. Every sentence of
the findings is generated from the numbers."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pandas as pd

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
                rows.append({
                    "end": end_name, "choice": choice,
                    "change": f"{end[choice]} -> {getattr(r, choice)}", "task": r.task,
                    "verdict": _mark(r), "flips": collapses(r.verdict) != collapses(b.verdict),
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
        said = f"Under {protocol(end)} TopK collapses {yes} of {len(base)} tasks against RandomK."
        if by.empty:
            said += f" No single choice flips that verdict on any task from {protocol(end)}."
        else:
            said += (" One choice flips it" if len(by) == 1 else
                     f" {len(by)} choices flip it, each alone") + ": " + "; ".join(
                f"{choice} {change} on {', '.join(tasks)}"
                for (choice, change), tasks in by.items()) + "."  # fmt: skip
        if len(mine):
            top = mine.loc[mine.delta.abs().idxmax()]
            said += (f" The largest change in TopK - RandomK is {top.delta:+.2f}"
                     f" ({top.choice} {top.change}, {top.task}).")  # fmt: skip
        out.append("- " + said)
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
            f"{r.p:.3f}", f"{adj[i]:.3f}", str(r.n), str(r.draws), f"{r.mde:.2f}", r.verdict,
            rule.ratio_reading(r.baseline - r.topk, r.baseline - r.randomk),
            rule.error_rates(r.n, r.draws, calibration=cal),
        ]) + " |")  # fmt: skip
    return out


INTRO = (
    "the seed claim (TopK collapses a task against RandomK: TopK below RandomK with the Holm "
    "p < 0.05 of the exact test with examples and RandomK draws as random factors, Holm over "
    "every cell of this page; the 3x drop ratio is a secondary reading) in every cell one choice "
    "away from the Cognitive Mirrors protocol or from the causal one "
    "(`interp_heads/studies/spec_curve.py`)."
)


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
) -> list[Path]:
    """``docs/<stem>.md`` and its figure ``docs/figures/<stem>.svg``; returns the files written."""
    from interp_heads.figures.spec_curve import plot_spec_curve

    docs.mkdir(parents=True, exist_ok=True)
    frame = decide_cells(frame)
    page, written = docs / f"{stem}.md", []
    tasks = list(dict.fromkeys(frame.task))
    flips = flip_rows(frame, ends, names)
    fig = plot_spec_curve(frame, {c: list(o) for c, o in options.items()})
    image = None
    try:
        from interp_heads.figures.static import write_static

        written += write_static({stem: fig}, docs / "figures", ["svg"])
        image = Path(os.path.relpath(written[-1].resolve(), page.resolve().parent)).as_posix()
    except Exception as exc:  # noqa: BLE001 (no kaleido or Chromium: the page without it)
        print(f"no static figure: {str(exc).splitlines()[0] if str(exc) else exc}")
    text = [
        f"# {title}",
        "",
        f"Generated by `interp-heads study` on {dt.date.today()}: {intro}",
        "",
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
    ]
    page.write_text("\n".join(text) + "\n", encoding="utf-8")
    return [page, *written]
