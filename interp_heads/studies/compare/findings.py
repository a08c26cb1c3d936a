"""The comparison page's findings: a few sentences written from its tables' numbers.

Nothing here knows a result in advance: each sentence is built from the verdict rows
(``compare.tables.verdict_frame``), the probe-vs-causal agreement and the choices table, so the
text changes when the runs do. A sentence whose numbers are missing is left out.
"""

from __future__ import annotations

import pandas as pd

from interp_heads.studies.compare.tables import FIXED_K


def findings(
    verdicts: pd.DataFrame,
    agreement: pd.DataFrame | None = None,
    choices: pd.DataFrame | None = None,
    names: dict[str, str] | None = None,
) -> list[str]:
    """The sentences, in page order. ``verdicts``: the verdict rows of the two protocols;
    ``names``: ``{protocol key: the words for it}``."""
    names = names or {}
    out = [_unmasked(verdicts, names)]
    for protocol, v in verdicts.groupby("protocol", sort=False):
        who = names.get(protocol, protocol)
        out += [_collapse(v, who), _floor(v, who)]
    out += [_lowk(verdicts, names), _agree(agreement), _choice(choices)]
    return [s for s in out if s]


def _unmasked(v: pd.DataFrame, names: dict) -> str:
    parts = [
        f"{names.get(p, p)} {g.drop_duplicates('task').unmasked.mean():.2f}"
        for p, g in v.groupby("protocol", sort=False)
        if g.unmasked.notna().any()
    ]
    if not parts:
        return ""
    return "The unmasked model's accuracy, averaged over the tasks: " + "; ".join(parts) + "."


def _collapse(v: pd.DataFrame, who: str) -> str:
    bits = []
    for at, label in ((f"k = {FIXED_K}", f"at k = {FIXED_K}"), ("elbow", "at the elbow k")):
        g = v[v.point == at]
        if g.empty:
            continue
        yes = g[g.collapses == "yes"]
        tasks = f" ({', '.join(yes.task)})" if len(yes) else ""
        ratios = _ratios(g)
        bits.append(f"in {len(yes)} of {g.task.nunique()} tasks {label}{tasks}{ratios}")
    if not bits:
        return ""
    caveat = ""
    undecided = v[v.collapses.str.startswith("undecided")]
    if len(undecided):
        caveat = (
            f"; {len(undecided)} of {len(v)} cells are undecided (too few examples or draws, or "
            "a metric that cannot show a drop there: sweep.verdict)"
        )
    blind = v[v.collapses.str.startswith("undecided: ")]
    for why in dict.fromkeys(blind.collapses.str[len("undecided: ") :]):
        n = int((blind.collapses == f"undecided: {why}").sum())
        caveat += f"; {n} of {len(v)} cells are undecided: {why} (metrics.scorable)"
    return f"Under {who}, TopK collapses the task against RandomK " + "; ".join(bits) + caveat + "."


def _floor(v: pd.DataFrame, who: str) -> str:
    """A protocol whose random control falls to half the unmasked score or below in most tasks
    at k = FIXED_K cannot show TopK's effect there: say so, so that its "no" is not misread."""
    g = v[(v.point == f"k = {FIXED_K}") & v.RandomK.notna() & v.unmasked.notna()]
    if g.empty:
        return ""
    low = g[g.RandomK <= g.unmasked / 2]
    if len(low) * 2 <= len(g):
        return ""
    return (
        f"Under {who}, masking {FIXED_K} random heads already takes the score from "
        f"{g.unmasked.mean():.2f} to {g.RandomK.mean():.2f} (averaged over the tasks; at or "
        f"below half the unmasked score in {len(low)} of {len(g)} tasks): the control collapses "
        "as TopK does, so at this k the protocol cannot tell the two apart; its 'no' says the "
        "rule cannot separate them here, not that the TopK heads do not matter."
    )


def _ratios(g: pd.DataFrame) -> str:
    ok = g[(g.control_drop > 0) & g.top_drop.notna()]
    if ok.empty:
        return ""
    r = ok.top_drop / ok.control_drop
    return f", drop ratios {r.min():.1f}x to {r.max():.1f}x"


def _lowk(v: pd.DataFrame, names: dict) -> str:
    g = v[(v.point != "elbow") & v.LowK.notna() & v.unmasked.notna()] if "LowK" in v else v[:0]
    if g.empty:
        return ""
    parts = []
    for p, h in g.groupby("protocol", sort=False):
        gap = (h.unmasked - h.LowK).mean()
        parts.append(
            f"{names.get(p, p)}: LowK {h.LowK.mean():.2f} against unmasked "
            f"{h.unmasked.mean():.2f} and TopK {h.TopK.mean():.2f} (LowK drops {gap:+.2f})"
        )
    return (
        f"Masking the {FIXED_K} heads of least |importance| (LowK; not the signed tail, TailK) "
        "instead, averaged over the tasks: " + "; ".join(parts) + "."
    )


def _agree(a: pd.DataFrame | None) -> str:
    if a is None or a.empty:
        return ""
    rho = a.Spearman
    col = f"top-{FIXED_K} overlap"
    over = f"; their top {FIXED_K} heads share {a[col].mean():.0%} on average" if col in a else ""
    word = "barely" if rho.abs().max() < 0.3 else "moderately" if rho.abs().max() < 0.6 else ""
    how = f"agree {word}".rstrip() if word else "agree at most"
    return (
        f"The probe's ranking and the causal ranking {how}: Spearman {rho.min():.2f} to "
        f"{rho.max():.2f} over the tasks{over}."
    )


def _choice(c: pd.DataFrame | None) -> str:
    if c is None or c.empty or "seed" not in set(c.run):
        return ""
    col = f"TopK - RandomK @{FIXED_K}"
    seed = c[c.run == "seed"].iloc[0]
    others = c[~c.run.isin(["seed", "causal"])].dropna(subset=[col])
    if others.empty or seed[col] != seed[col]:
        return ""
    moved = (others[col] - seed[col]).abs()
    top = others.loc[moved.idxmax()]
    return (
        f"Of the study's choices changed one at a time, `{top.run}` moves TopK - RandomK at "
        f"k = {FIXED_K} the most: {seed[col]:+.2f} under the study's protocol, {top[col]:+.2f} "
        f"with {top.changes or top.run} (mean over the tasks)."
    )
