"""Report sections on which heads: every ranking's split-half stability (from the manifest), the
known-head kinds among each task's TopK (``known_heads.csv``), and, from ``<run>/heads/`` (written
by ``docs/make_heads.py``), the re-ranked split halves and the cross-task specificity heatmaps.
Each is empty when its numbers are absent."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from interp_heads.heads import head_label


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
    ks = [int(k) for k in ((run.get("manifest") or {}).get("ks") or [32])]
    k = min(
        max([x for x in ks if x <= 32] or [min(ks)]), int(attribution.groupby("task").size().max())
    )
    cells = []
    for r in known_kinds_rows(attribution, known, k):
        names = ", ".join(f"{lab} ({kind}, rank {rank})" for lab, kind, rank in r["heads"])
        cells.append(
            f"<tr><td>{html.escape(r['task'])}</td><td>{len(r['heads'])} of {k}</td>"
            f"<td>{html.escape(names) or 'none'}</td></tr>"
        )
    counts = {kind: len(h) for kind, h in known_markers(known).items()}
    note = ", ".join(f"{kind}: {n}" for kind, n in counts.items()) or "none"
    return [
        "<h2>Known head kinds among each task's TopK</h2>",
        '<p class="note">Previous-token, duplicate-token and induction scores on repeated random '
        "tokens, successor scores from the OV circuit (<code>known_heads.csv</code>); a head is of a "
        f"kind when it reaches the kind's threshold. Heads of each kind in the model: "
        f"{html.escape(note)}. They are marked on the heatmaps above.</p>",
        "<table><tr><th>task</th><th>known-kind heads in TopK</th><th>heads (kind, rank)</th></tr>"
        + "".join(cells)
        + "</table>",
    ]


def stability_parts(manifest: dict) -> list[str]:
    """Every ranking's split-half agreement at the run's k values, in words
    (``attribution.stability.verdict``: too few examples to decide, unstable, partly stable,
    stable)."""
    from interp_heads.attribution.stability import verdict

    entries = manifest.get("stability") or {}
    rows = []
    for task, e in entries.items():
        if "jaccard" not in e:
            why = html.escape(str(e.get("skipped", "not measured")))
            rows.append(f"<tr><td>{html.escape(task)}</td><td>{e.get('n_examples')}</td>"
                        f"<td colspan='4'>{why}</td></tr>")  # fmt: skip
            continue
        for k, j in e["jaccard"].items():
            rows.append(
                f"<tr><td>{html.escape(task)}</td><td>{e['n_examples']} ({'/'.join(map(str, e['n_half']))})"
                f"</td><td>{k}</td><td>{j:.2f} ({e['shared'][k]} shared)</td>"
                f"<td>{e['spearman']:.2f}</td><td>{_marked(verdict(e, k))}</td></tr>"
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
    text = html.escape(words)
    return "<b>unstable</b>" + text[len("unstable") :] if words.startswith("unstable") else text


def stability_html(frame: pd.DataFrame) -> str:
    """Split-half agreement per task and k, in words (an unstable row in bold)."""
    from interp_heads.attribution.stability import too_few, verdict

    rows = []
    for r in frame.sort_values(["task", "k"]).itertuples():
        n_half = [int(r.n_examples) - int(r.n_half), int(r.n_half)]
        shared = getattr(r, "shared", None)
        if shared is None or shared != shared:  # older tables: from the Jaccard
            shared = round(2 * r.k * r.jaccard / (1 + r.jaccard))
        entry = {"jaccard": {str(r.k): r.jaccard}, "shared": {str(r.k): int(shared)}}
        entry |= {"too_few": too_few(n_half)} if too_few(n_half) else {}
        rows.append(
            f"<tr><td>{html.escape(str(r.task))}</td><td>{r.n_examples} ({r.n_half})</td>"
            f"<td>{r.k}</td><td>{r.jaccard:.2f}</td><td>{r.spearman:.2f}</td>"
            f"<td>{_marked(verdict(entry, r.k))}</td></tr>"
        )
    head = (
        "<tr><th>task</th><th>rank examples (per half)</th><th>k</th><th>TopK Jaccard</th>"
        "<th>Spearman</th><th>verdict</th></tr>"
    )
    return f"<table>{head}{''.join(rows)}</table>"


def which_heads_parts(run_dir: str | Path) -> list[str]:
    """HTML parts for the report (nothing when ``make_heads`` has not run on this folder)."""
    from interp_heads.analysis.specificity import drop_heatmap

    store = Path(run_dir) / "heads"
    parts: list[str] = []
    if (store / "stability.csv").is_file():
        parts.append("<h2>Ranking stability, each half re-ranked (make heads)</h2>")
        parts.append(
            '<p class="note">Two disjoint halves of the rank examples rank the heads separately '
            "(each with its own mean ablation value); unstable: the halves share under half of "
            "their top k (Jaccard &lt; 1/3).</p>"
        )
        parts.append(stability_html(pd.read_csv(store / "stability.csv")))
    if (store / "specificity.csv").is_file():
        matrix = pd.read_csv(store / "specificity.csv")
        parts.append(
            "<h2>Cross-task specificity: one task's TopK masked, every task evaluated</h2>"
        )
        for k in sorted(matrix.k.unique()):
            fig = drop_heatmap(matrix, int(k))
            parts.append(fig.to_html(full_html=False, include_plotlyjs=False))
    return parts
