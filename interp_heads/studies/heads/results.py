"""The "Which heads" section of docs/results.md, from the two run folders of ``make heads``.

``make heads`` writes it between the markers of ``studies.seed_figure``, which keeps it when ``make
demo`` regenerates the page; every number is read from the heads run folder (no model needed).
"""

from __future__ import annotations

import datetime as dt

from interp_heads.analysis.specificity import exclusivity
from interp_heads.figures.escape import md, md_code
from interp_heads.run.manifest import Manifest
from interp_heads.studies.heads.page import (
    known,
    or_missing,
    retrieval_section,
    seed_table,
    sharing,
    specificity,
    stability,
)
from interp_heads.studies.protocols import paper_k_text
from interp_heads.studies.seed_figure import SECTIONS


def shared_sentence(rankings: dict, ks=(8, 16, 32)) -> str:
    """Plainly: how much of each task's TopK is in every task's TopK, per k."""
    ex = exclusivity(rankings, list(ks))
    parts = []
    for k, grp in ex.groupby("k"):
        shares = sorted({int(n) for n in grp.shared_by_all})
        same = len(shares) == 1
        what = (f"{shares[0]} of {k} ({shares[0] / k:.0%}) for every task" if same
                else ", ".join(f"{md(r.task)} {r.shared_by_all} of {k}" for r in grp.itertuples()))  # fmt: skip
        parts.append(f"k = {k}: {what}")
    return "Share of each task's TopK that is in all four tasks' TopK: " + "; ".join(parts) + "."


def run_stability(manifest: Manifest | dict) -> list[str]:
    """The run's own split-half agreement (per-example halves stored with each ranking)."""
    entries = Manifest.of(manifest).stability or {}
    if not entries:
        return ["*The run's manifest has no per-ranking stability yet (rerun its config).*"]
    out = ["| task | rank examples (halves) | k | TopK Jaccard | shared | Spearman | unstable |",
           "|---" * 7 + "|"]  # fmt: skip
    for task, e in entries.items():
        for k, j in e.get("jaccard", {}).items():
            flag = "**yes**" if int(k) in e.get("unstable", []) else "no"
            out.append(f"| {md(task)} | {e['n_examples']} ({'/'.join(map(str, e['n_half']))}) | {k} | "
                       f"{j:.2f} | {e['shared'][k]} of {k} | {e['spearman']:.2f} | {flag} |")  # fmt: skip
    return out


def results_block(inp, store) -> str:
    """The section, markers included."""
    m = Manifest.of(inp.manifest)
    c, total = m.config, m.model["n_layers"] * m.model["n_heads"]
    ks = ", ".join(f"{k} ({k / total:.1%})" for k in m.ks)
    lines = [
        SECTIONS["heads"][0],
        "## Which heads (from `make heads`)",
        "",
        "Written by `make heads` (`interp-heads study heads`: `configs/heads.toml` into "
        + md(inp.run)
        + " and `configs/heads_retrieval.toml` into "
        + md(inp.retrieval_run)
        + f", then this section) on {dt.date.today().isoformat()} from the run folder "
        f"{md(inp.run)} (git "
        f"{md('?' if m.git is None else m.git)}); `make demo` keeps this section as it is. Setup: the four "
        f"built-in tasks, {md(c['attribution'])} on {md(c['n_rank'])} rank examples, "
        f"{md(c['ablation'])} ablation, up to {md(c['n_eval'])} eval examples, k = {ks} of "
        f"{total} heads. {paper_k_text(total)} Method notes and figures: `docs/heads.md`.",
        "",
        "### Cross-task specificity: mask task A's TopK, evaluate every task B",
        "",
        *or_missing(specificity, store / "specificity.csv", store),
        "### The Cognitive Mirrors figure with exclusive TopK beside plain TopK (accuracy, mean [95% CI])",
        "",
        f"Drawn in {md_code(inp.run / 'index.html')} (ExclusiveTopK dash-dotted).",
        "",
        *seed_table(inp.run),
        "",
        "### Heads shared by all tasks",
        "",
        shared_sentence(inp.rankings),
        "",
        *sharing(inp.rankings),
        "",
        "### Split-half stability of every built-in task's ranking",
        "",
        "Per-example halves (stored with each ranking by every run; alternate rank examples):",
        "",
        *run_stability(m),
        "",
        "Each half re-ranked on its own (its own mean-ablation value; the run's `stability` "
        "analysis):",
        "",
        *or_missing(stability, store / "stability.csv", store),
        "",
        "### SmolLM2's known heads",
        "",
        "Detector scores equal TransformerLens' `detect_head` within 1e-5 on the tiny, the planted "
        "and the embedded model (`tests/unit/analysis/test_known_heads.py`, "
        "`tests/integration/test_known_heads_smollm.py`); each planted head ranks first.",
        "",
        *or_missing(lambda: known(inp.known(), inp.rankings, total), inp.known_path),
        "",
        "### Retrieval heads (Wu et al. 2024)",
        "",
        *or_missing(lambda: retrieval_section(inp, total), inp.retrieval_path),
        SECTIONS["heads"][1],
    ]
    return "\n".join(lines)
