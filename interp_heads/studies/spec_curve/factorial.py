"""The full factorial's part of docs/spec_curve.md: how often TopK collapses a task under each
option of each varied choice (the choices' interactions held in, not one at a time), and the
multiverse figure (cells sorted by effect, the choice matrix beneath). Written from
``studies.spec_curve``'s frame rows with ``design = "factorial"``; every sentence from the numbers."""

from __future__ import annotations

import pandas as pd

from interp_heads.studies.protocols import NAMES
from interp_heads.sweep.verdict import is_decided as decided


def collapses(verdict: str) -> bool:
    """A decided yes (``spec_curve.page.collapses``; that page reads this module)."""
    return verdict == "yes"


def protocol(end: str) -> str:
    return NAMES.get(end, f"the {end} protocol")


FIGURE = "multiverse"  # docs/figures/<stem>_<FIGURE>.svg


def option_table(multi: pd.DataFrame, factorial: tuple[str, ...], names=("study", "causal")):
    """Per end, choice and option: the decided cell-task pairs, how many say yes, the share, and
    the undecided pairs (every other choice of the factorial takes each of its options)."""
    rows = []
    for end in names:
        mine = multi[multi.end == end]
        for choice in (c for c in factorial if c in mine):
            for option, g in mine.groupby(choice, sort=False):
                ok = g[g.verdict.map(decided)]
                yes = int(ok.verdict.map(collapses).sum())
                rows.append({"end": end, "choice": choice, "option": option, "decided": len(ok),
                             "yes": yes, "share": yes / len(ok) if len(ok) else float("nan"),
                             "undecided": len(g) - len(ok)})  # fmt: skip
    return pd.DataFrame(rows)


def option_lines(table: pd.DataFrame) -> list[str]:
    out = ["| from | choice | option | TopK collapses the task | undecided |", "|---" * 5 + "|"]
    for r in table.itertuples():
        share = f" ({r.share:.0%})" if r.decided else ""
        out.append(f"| {protocol(r.end)} | {r.choice} | {r.option} | {r.yes} of {r.decided}"
                   f"{share} | {r.undecided} |")  # fmt: skip
    return out


def factorial_findings(table: pd.DataFrame, multi: pd.DataFrame, names=("study", "causal")):
    """Per end: how many decided cell-task pairs collapse, and the choice whose options differ
    most in that share (the one that decides the most, with the others varied beside it)."""
    out = []
    for end in names:
        t = table[table.end == end] if len(table) else table
        mine = multi[multi.end == end]
        if not len(t):
            continue
        ok = mine[mine.verdict.map(decided)]
        yes = int(ok.verdict.map(collapses).sum())
        n_cells = len(mine.drop_duplicates([c for c in t.choice.unique() if c in mine]))
        said = (f"Around {protocol(end)} ({n_cells} cells, {len(mine)} cell-task pairs): TopK "
                f"collapses the task in {yes} of {len(ok)} decided pairs"
                f" ({len(mine) - len(ok)} undecided).")  # fmt: skip
        spread = t.groupby("choice", sort=False).share.agg(lambda s: s.max() - s.min())
        spread = spread.dropna()
        if len(spread) and spread.max() > 0:
            choice = spread.idxmax()
            by = t[t.choice == choice]
            said += (f" The share differs most between the options of {choice}: "
                     + ", ".join(f"{r.option} {r.yes} of {r.decided}" for r in by.itertuples())
                     + ".")  # fmt: skip
        out.append("- " + said)
    return out


def section(multi: pd.DataFrame, factorial: tuple[str, ...], image: str | None,
            names=("study", "causal")) -> list[str]:  # fmt: skip
    """The factorial's markdown: its findings, the figure, the option table."""
    if not len(multi):
        return []
    table = option_table(multi, factorial, names)
    return [
        "## The full factorial",
        "",
        f"Every combination of {', '.join(factorial)} around each end, the end's format, "
        "reference and examples kept (Simonsohn, Simmons & Nelson 2020): each choice's options "
        "with every other choice varied beside them, so a choice that matters only together with "
        "another shows here, not in the one-at-a-time table. Undecided pairs (the metric cannot "
        "score them, nothing to remove, too few examples) are counted apart.",
        "",
        *factorial_findings(table, multi, names),
        "",
        *([f"![multiverse]({image})", ""] if image else []),
        *option_lines(table),
        "",
    ]


def figure(multi: pd.DataFrame, factorial: tuple[str, ...], options: dict):
    """The multiverse: every factorial cell sorted by its mean effect, the choice matrix (each
    varied choice, and the end) beneath."""
    from interp_heads.figures.spec_curve import plot_spec_curve

    choices = {"end": list(dict.fromkeys(multi.end)),
               **{c: list(options[c]) for c in factorial if c in options}}  # fmt: skip
    return plot_spec_curve(
        multi, choices, cell_labels=False,
        title="The multiverse: TopK - RandomK in every cell of the full factorial (95% CI)",
    )  # fmt: skip
