"""Report sections on which heads: every ranking's split-half stability (from the manifest), the
known-head kinds among each task's TopK (``known_heads.csv``), and, from ``<run>/heads/`` (written
by ``make heads``: the run's ``analyses``), the re-ranked split halves and the cross-task specificity heatmaps.
Each is empty when its numbers are absent."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from interp_heads.figures.escape import esc, esc_num
from interp_heads.heads import head_label
from interp_heads.run import ARTEFACTS, Run
from interp_heads.run.manifest import Manifest


def known_markers(known: pd.DataFrame | None) -> dict:
    """``{kind: [(layer, head), ...]}`` of the heads that reach their kind's threshold."""
    if known is None or not len(known):
        return {}
    hits = known[known.is_kind.astype(bool)]
    return {
        kind: [(int(r.layer), int(r.head)) for r in grp.itertuples()]
        for kind, grp in hits.groupby("kind", sort=False)
    }


def known_kinds_rows(attribution: pd.DataFrame, known: pd.DataFrame, k: int) -> list[dict]:
    """Per task: its TopK-``k`` heads of a known kind, with kinds and rank."""
    kinds: dict[tuple[int, int], list[str]] = {}
    for kind, heads in known_markers(known).items():
        for h in heads:
            kinds.setdefault(h, []).append(kind)
    rows = []
    for task, grp in attribution.groupby("task", sort=False):
        top = grp[grp["rank"] <= k].sort_values("rank")
        named = [(head_label(r.layer, r.head), "+".join(kinds[(r.layer, r.head)]), int(r.rank))
                 for r in top.itertuples() if (r.layer, r.head) in kinds]  # fmt: skip
        rows.append({"task": str(task), "k": k, "heads": named})
    return rows


def known_kinds_parts(run: dict) -> list[str]:
    """The known-kinds table of the report (nothing without ``known_heads.csv``)."""
    known, attribution = run.get("known"), run.get("attribution")
    if known is None or attribution is None or not len(attribution):
        return []
    ks = [int(k) for k in (Manifest.of(run.get("manifest")).ks or [32])]
    k = min(
        max([x for x in ks if x <= 32] or [min(ks)]), int(attribution.groupby("task").size().max())
    )
    cells = []
    for r in known_kinds_rows(attribution, known, k):
        names = ", ".join(f"{lab} ({kind}, rank {rank})" for lab, kind, rank in r["heads"])
        cells.append(
            f"<tr><td>{esc(r['task'])}</td><td>{len(r['heads'])} of {k}</td>"
            f"<td>{esc(names) or 'none'}</td></tr>"
        )
    counts = {kind: len(h) for kind, h in known_markers(known).items()}
    note = ", ".join(f"{kind}: {n}" for kind, n in counts.items()) or "none"
    return [
        "<h2>Known head kinds among each task's TopK</h2>",
        '<p class="note">Previous-token, duplicate-token and induction scores on repeated random '
        "tokens, successor scores from the OV circuit (<code>known_heads.csv</code>); a head is of a "
        f"kind when it reaches the kind's threshold. Heads of each kind in the model: "
        f"{esc(note)}. They are marked on the heatmaps above.</p>",
        "<table><tr><th>task</th><th>known-kind heads in TopK</th><th>heads (kind, rank)</th></tr>"
        + "".join(cells)
        + "</table>",
    ]


def stability_parts(manifest: Manifest | dict | None) -> list[str]:
    """Every ranking's split-half agreement at the run's k values, in words
    (``attribution.stability.verdict``: too few examples to decide, unstable, partly stable,
    stable)."""

    entries = Manifest.of(manifest).stability or {}
    rows = []
    for task, e in entries.items():
        if "jaccard" not in e:
            why = esc(e.get("skipped", "not measured"))
            rows.append(f"<tr><td>{esc(task)}</td><td>{esc(e.get('n_examples'))}</td>"
                        f"<td colspan='4'>{why}</td></tr>")  # fmt: skip
            continue
        halves = "/".join(map(str, e.get("n_half") or []))
        for k, j in e["jaccard"].items():
            rows.append(
                f"<tr><td>{esc(task)}</td><td>{esc(e.get('n_examples'))} ({esc(halves)})</td>"
                f"<td>{esc(k)}</td><td>{esc_num(j, '.2f')} ({esc((e.get('shared') or {}).get(k))}"
                f" shared)</td><td>{esc_num(e.get('spearman'), '.2f')}</td>"
                f"<td>{_marked(_verdict(e, k))}</td></tr>"
            )
    if not rows:
        return []
    head = ("<tr><th>task</th><th>rank examples (halves)</th><th>k</th><th>TopK Jaccard</th>"
            "<th>Spearman</th><th>verdict</th></tr>")  # fmt: skip
    return [
        "<h2>Ranking stability (split-half)</h2>",
        '<p class="note">Each ranking\'s per-example scores averaged over two halves of its rank '
        "examples (alternate examples); agreement of the two halves' rankings. Unstable: the halves "
        "share under half of their top k (Jaccard &lt; 1/3); stable: 80% or more (Jaccard &ge; "
        "2/3); partly stable between. A verdict needs 5 examples per half (fewer: one example "
        "can move a head in or out of a half's top k on its own).</p>",
        f"<table>{head}{''.join(rows)}</table>",
    ]


def _marked(words: str) -> str:
    """A verdict, escaped, its first word in bold when it is ``unstable``."""
    text = esc(words)
    return "<b>unstable</b>" + text[len("unstable") :] if words.startswith("unstable") else text


def _verdict(entry: dict, k) -> str:
    """The stability verdict in words; a hand-edited entry it cannot read says so."""
    from interp_heads.attribution.stability import verdict

    try:
        return verdict(entry, k)
    except (TypeError, ValueError, KeyError, AttributeError):
        return "unreadable entry"


def stability_html(frame: pd.DataFrame) -> str:
    """Split-half agreement per task and k, in words (an unstable row in bold)."""
    from interp_heads.attribution.stability import too_few

    rows = []
    for r in frame.sort_values(["task", "k"], key=lambda c: c.astype(str)).itertuples():
        rows.append(
            f"<tr><td>{esc(r.task)}</td><td>{esc(r.n_examples)} ({esc(r.n_half)})</td>"
            f"<td>{esc(r.k)}</td><td>{esc_num(r.jaccard, '.2f')}</td>"
            f"<td>{esc_num(r.spearman, '.2f')}</td><td>{_row_verdict(r, too_few)}</td></tr>"
        )
    head = (
        "<tr><th>task</th><th>rank examples (per half)</th><th>k</th><th>TopK Jaccard</th>"
        "<th>Spearman</th><th>verdict</th></tr>"
    )
    return f"<table>{head}{''.join(rows)}</table>"


def _row_verdict(r, too_few) -> str:
    """One stability row's verdict; a hand-edited row whose numbers are not numbers says so."""
    try:
        n_half = [int(r.n_examples) - int(r.n_half), int(r.n_half)]
        shared = getattr(r, "shared", None)
        if shared is None or shared != shared:  # older tables: from the Jaccard
            shared = round(2 * int(r.k) * float(r.jaccard) / (1 + float(r.jaccard)))
        entry = {"jaccard": {str(r.k): float(r.jaccard)}, "shared": {str(r.k): int(shared)}}
    except (TypeError, ValueError):
        return "unreadable entry"
    entry |= {"too_few": too_few(n_half)} if too_few(n_half) else {}
    return _marked(_verdict(entry, r.k))


def which_heads_parts(run_dir: str | Path) -> list[str]:
    """HTML parts for the report (nothing when the run has no ``analyses``).

    Raises:
        InputError: a ``heads/*.csv`` that is not the table the ``analyses`` steps write (names it).
    """
    run = Run.at(run_dir)
    parts: list[str] = []
    if run.folder.stability_csv.is_file():
        parts.append("<h2>Ranking stability, each half re-ranked (make heads)</h2>")
        parts.append(
            '<p class="note">Two disjoint halves of the rank examples rank the heads separately '
            "(each with its own mean ablation value); unstable: the halves share under half of "
            "their top k (Jaccard &lt; 1/3).</p>"
        )
        parts.append(_from_table(run, "stability", stability_html))
    if run.folder.specificity_csv.is_file():
        parts.append(
            "<h2>Cross-task specificity: one task's TopK masked, every task evaluated</h2>"
        )
        parts.append(_from_table(run, "specificity", _specificity_html))
    return parts


def _specificity_html(matrix: pd.DataFrame) -> str:
    from interp_heads.analysis.specificity import drop_heatmap

    figs = [drop_heatmap(matrix, int(k)) for k in sorted(matrix.k.unique())]
    return "".join(fig.to_html(full_html=False, include_plotlyjs=False) for fig in figs)


def _from_table(run: Run, name: str, render) -> str:
    """``render`` of the run's table ``name``; a damaged or hand-made table is named in one
    line."""
    from interp_heads.errors import InputError, one_line

    path = getattr(run.folder, ARTEFACTS[name][0])
    try:
        return render(run.need(name))
    except InputError:  # unparsable: already one line naming the file
        raise
    except Exception as exc:  # pandas and plotly raise many types for a table not theirs
        raise InputError(f"{path}: unreadable ({type(exc).__name__}: {one_line(exc)})") from None
