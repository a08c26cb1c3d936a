"""docs/spec_curve.md: the specification curve's answer first (the verdict at each end, which
single choice flips it), then every cell, from ``studies.spec_curve``'s frame. Every sentence of
the findings is generated from the numbers."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pandas as pd

from interp_heads.figures.escape import md
from interp_heads.store.pages import page_folder
from interp_heads.store.pages import write_page as write_file
from interp_heads.sweep.inference import holm

FIGURE = "spec_curve"  # docs/figures/<FIGURE>.svg
PROTOCOL = {
    "study": "the study's protocol",
    "causal": "the causal protocol",
    "default": "the default protocol (mean ablation at every position, accuracy)",
}


def protocol(end: str) -> str:
    return PROTOCOL.get(end, f"the {end} protocol")


def collapses(verdict: str) -> bool:
    """Whether a cell's verdict is a decided yes (not 'yes, but too few ...')."""
    return verdict == "yes"


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
            "p", "Holm p", "n", "draws", "detectable", "collapses?"]  # fmt: skip
    out = ["| " + " | ".join(cols) + " |", "|---" * len(cols) + "|"]
    adj = pd.Series(holm(frame.p.to_numpy(float)), index=frame.index)
    for i, r in frame.iterrows():
        out.append("| " + " | ".join([
            cell_id(r), r.task, str(r.k_heads), r.metric, f"{r.baseline:.2f}", f"{r.topk:.2f}",
            f"{r.randomk:.2f}", f"{r.effect:+.2f} [{r.effect_low:+.2f}, {r.effect_high:+.2f}]",
            f"{r.p:.3f}", f"{adj[i]:.3f}", str(r.n), str(r.draws), f"{r.mde:.2f}", r.verdict,
        ]) + " |")  # fmt: skip
    return out


INTRO = (
    "the seed claim (TopK collapses a task against RandomK: TopK's drop at least 3x RandomK's and "
    "the paired 95% interval of TopK - RandomK below 0 with p < 0.05) in every cell one choice "
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

    page_folder(docs)
    page, written = docs / f"{stem}.md", []
    frame = frame.assign(task=frame.task.map(md))  # a task name is text on the page, not markup
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
        "p: the exact paired sign-flip test over examples; Holm p: adjusted over every row of "
        "this table; n: evaluated examples; draws: RandomK draws; detectable: the smallest "
        "TopK - RandomK the cell detects at 80% power (docs/method.md).",
        "",
        *cells_table(frame),
        "",
    ]
    write_file(page, "\n".join(text) + "\n")
    return [page, *written]
