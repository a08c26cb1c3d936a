"""The text of docs/heads.md from the two run folders of ``make heads`` (no model needed)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pandas as pd

from interp_heads.analysis.known_heads import THRESHOLDS, known_kinds
from interp_heads.analysis.specificity import drop_heatmap, exclusivity, shared_heads
from interp_heads.attribution import HeadScores
from interp_heads.choices import BASELINE
from interp_heads.figures.escape import md, md_code
from interp_heads.heads import head_label
from interp_heads.interventions.selections import ExclusiveTopK, RandomK, TopK
from interp_heads.run import Run
from interp_heads.run.manifest import Manifest
from interp_heads.store.atomic import atomic
from interp_heads.store.names import safe_name
from interp_heads.store.pages import write_page as write_file

# the seed table's columns: the registered selections' table names
SELS = [BASELINE, TopK.display, ExclusiveTopK.display, RandomK.display]


def _labels(heads) -> str:
    return ", ".join(head_label(*h) for h in heads) or "none"


def _cell(row) -> str:
    return f"{row['mean']:.2f} [{row.ci_low:.2f}, {row.ci_high:.2f}]"


def seed_table(run: Path) -> list[str]:
    s = Run.at(run).need("summary")
    s = s[s.metric == "accuracy"]
    out = [
        "| task | k | unmasked | TopK | ExclusiveTopK | RandomK (outside TopK) |",
        "|---" * 6 + "|",
    ]
    for task in dict.fromkeys(s.task):
        t = s[s.task == task]
        base = _cell(t[t.selection == BASELINE].iloc[0])
        for k in sorted(k for k in t.k.unique() if k > 0):
            cells = {r.selection: _cell(r) for _, r in t[t.k == k].iterrows()}
            out.append(
                f"| {md(task)} | {k} | {base} | "
                + " | ".join(cells.get(x, "-") for x in SELS[1:])
                + " |"
            )
    return out


def sharing(rankings: dict) -> list[str]:
    ex = exclusivity(rankings, [8, 16, 32])
    out = [
        "| k | task | in every task's TopK | in no other task's TopK | layer 0 |",
        "|---" * 5 + "|",
    ]
    for r in ex.itertuples():
        out.append(
            f"| {r.k} | {md(r.task)} | {r.shared_by_all} of {r.k} | {r.exclusive} | {r.layer0} |"
        )
    out.append("")
    for k in (8, 16, 32):
        out.append(f"- heads in all four tasks' TopK-{k}: {_labels(shared_heads(rankings, k))}")
    return out


def specificity(store: Path) -> list[str]:
    m = Run.at(store.parent).need("specificity")  # store: the run's heads/ folder
    out = []
    for k in sorted(m.k.unique()):
        sub = m[m.k == k]
        tasks = list(dict.fromkeys(sub.task))
        out += [f"**k = {k}** (rows: whose TopK is masked; columns: evaluated task; accuracy drop "
                "[95% CI])", "", "| masked \\ evaluated | " + " | ".join(map(md, tasks)) + " |",
                "|---" * (len(tasks) + 1) + "|"]  # fmt: skip
        for src in dict.fromkeys(sub.source):
            row = sub[sub.source == src].set_index("task")
            cells = [
                f"{row.loc[t, 'drop']:.2f} [{row.loc[t, 'ci_low']:.2f}, {row.loc[t, 'ci_high']:.2f}]"
                for t in tasks
            ]
            out.append(f"| {md(src)} | " + " | ".join(cells) + " |")
        diag = sub[sub.source == sub.task]
        off = sub[sub.source != sub.task]
        own = sum(
            1 for t in tasks
            if float(sub[(sub.task == t) & (sub.source == t)]["drop"].iloc[0])
            >= float(sub[sub.task == t]["drop"].max())
        )  # fmt: skip
        out += ["", f"Mean drop on the diagonal (own TopK) {diag['drop'].mean():.2f}, off the diagonal "
                f"{off['drop'].mean():.2f}; in {own} of {len(tasks)} columns the task's own TopK drops "
                "it most.", ""]  # fmt: skip
        with atomic(store / f"specificity_k{int(k)}.html") as tmp:  # never through a link
            drop_heatmap(m, int(k)).write_html(tmp, include_plotlyjs="cdn")
    return out


def known(scores: dict, rankings: dict, n_heads_total: int) -> list[str]:
    out = ["| kind | threshold | heads at or above | top 5 (score) |", "|---" * 4 + "|"]
    for kind, s in scores.items():
        n = int((s.scores >= THRESHOLDS[kind]).sum())
        top = ", ".join(f"{head_label(*h)} ({float(s.scores[h]):.2f})" for h in s.top(5, "signed"))
        out.append(f"| {md(kind)} | {THRESHOLDS[kind]} | {n} of {n_heads_total} | {top} |")
    out += ["", "Known kinds among each task's TopK-32 (heads reaching a threshold):", "",
            "| task | TopK-32 heads of a known kind |", "|---|---|"]  # fmt: skip
    for task, order in rankings.items():
        kinds = known_kinds(scores, order[:32])
        named = [
            f"{head_label(*h)} ({'+'.join(k)}, rank {i + 1})"
            for i, (h, k) in enumerate(kinds.items())
            if k
        ]
        out.append(f"| {md(task)} | {len(named)} of 32: {', '.join(named) or 'none'} |")
    return out


def retrieval(s: HeadScores, sig: pd.DataFrame, rankings: dict, n_heads_total: int) -> list[str]:
    heads = [h for h in s.top(n_heads_total, "signed") if float(s.scores[h]) >= 0.1]
    causal = rankings.get("retrieval")  # the small size does not rank retrieval causally
    n = s.provenance.get("n_examples")
    out = [f"- {len(heads)} of {n_heads_total} heads ({100 * len(heads) / n_heads_total:.1f}%) have a "
           f"retrieval score >= 0.1 on the retrieval task's {n} rank examples (Wu et al. report 3-6%).",
           "- Top 10: " + ", ".join(f"{head_label(*h)} ({float(s.scores[h]):.2f})" for h in s.top(10, "signed")) + "."]  # fmt: skip
    if causal is None:
        out.append("- The causal ranking of retrieval is not in this run (`--size small` ranks "
                   "only the cheap tasks), so no overlap with it is shown.")  # fmt: skip
    for k in (8, 32, len(heads)) if causal is not None else ():
        if k:
            both = set(s.top(k, "signed")) & set(causal[:k])
            out.append(
                f"- Top {k} by retrieval score vs causal TopK-{k} of retrieval: {len(both)} shared ({_labels(sorted(both))})."
            )
    out += ["", "Masking the top retrieval-score heads vs RandomK (outside them, 3 draws) on the retrieval eval split:", "",
            "| k | unmasked | top retrieval-score heads | RandomK | drop ratio | difference [95% CI] | p |", "|---" * 7 + "|"]  # fmt: skip
    for r in sig.itertuples():
        out.append(f"| {r.k} | {r.baseline:.2f} | {r.top_mean:.2f} | {r.control_mean:.2f} | {r.drop_ratio:.1f} | "
                   f"{r.diff:.2f} [{r.diff_low:.2f}, {r.diff_high:.2f}] | {r.p_value:.3g} |")  # fmt: skip
    return out


def stability(store: Path) -> list[str]:
    f = Run.at(store.parent).need("stability").sort_values(["task", "k"])
    out = [
        "| task | rank examples (per half) | k | TopK Jaccard | shared | Spearman | unstable |",
        "|---" * 7 + "|",
    ]
    for r in f.itertuples():
        out.append(
            f"| {md(r.task)} | {r.n_examples} ({r.n_half}) | {r.k} | {r.jaccard:.2f} | {r.shared} of {r.k} | {r.spearman:.2f} | {'**yes**' if r.unstable else 'no'} |"
        )
    return out


METHOD = """## Method

- **Specificity** (`interp_heads.analysis.specificity`): for each source task A and k, A's TopK is mean-ablated
  on `hook_z` while every task B's eval split generates; the drop is B's unmasked accuracy minus its
  masked accuracy, paired over B's examples, 95% bootstrap CI (2000 resamples). Each source is an
  ordinary resumable sweep (`<run>/heads/cross/<A>`). **ExclusiveTopK** (selection `exclusive_topk`):
  A's k best heads among those in no other task's TopK of the same k.
- **Known heads** (`interp_heads.analysis.known_heads`): previous-token, duplicate-token and induction scores
  are the share of attention on the detection pattern over 8 sequences of 24 random tokens repeated
  twice (TransformerLens' `detect_head` "mul" measure; equal to it within 1e-5 in
  `tests/integration/test_known_heads_smollm.py`); the successor score (Gould et al. 2024) is the share
  of ordinal elements (digits, letters, capitals, days, months) whose OV-circuit top logit within
  their sequence is their successor. A head is of a kind when its score reaches the threshold shown.
- **Retrieval score** (`attribution = "retrieval_score"`, Wu et al. 2024): per rank example of the
  retrieval task, the answer is fed after the prompt; at each answer token a head scores a hit when
  its arg-max attention lands on the needle (the answer's occurrence in the prompt) at a position
  holding that very token; score = hits / needle length, averaged over examples; threshold 0.1.
- **Stability** (`interp_heads.attribution.stability`): the run's rank examples are split into alternate halves,
  each ranked with the run's attribution settings; TopK Jaccard at each k and Spearman correlation of
  the two importances; a ranking is flagged unstable at k when the Jaccard is below 1/3 (the halves
  share under half their TopK). Every `run` and `attribute` also records a cheaper split with each
  ranking (the means of its per-example scores over the same halves, no extra forward pass) in the
  ranking's provenance, the manifest and the report (`docs/cli.md`).
- Known kinds on the run's own page: every `run` stores the detectors' scores
  (`known_heads.json`/`.csv`) and marks them on `<run>/index.html`'s heatmaps, with a table of the
  known kinds among each task's TopK.
- Figures: `<run>/index.html` (the Cognitive Mirrors figure, with ExclusiveTopK dash-dotted),
  `<run>/heads/specificity_k*.html` (drop heatmaps), `<run>/heads/heatmap_<task>.html` (each task's
  ranking with known-kind and retrieval-head markers).
"""


def heatmaps(inp, store: Path) -> None:
    """Each task's ranking as a layer x head heatmap, known kinds and retrieval heads marked."""
    from interp_heads.figures.heatmaps import head_heatmap

    kinds = inp.known()
    marks = {
        k: [tuple(h) for h in (s.scores >= THRESHOLDS[k]).nonzero().tolist()]
        for k, s in kinds.items()
    }
    r = inp.retrieval()
    marks["retrieval"] = [tuple(h) for h in (r.scores >= 0.1).nonzero().tolist()]
    frame = Run.at(inp.run).need("ranking")
    for task, grp in frame.groupby("task"):
        scores = HeadScores.from_frame(grp, provenance={"rank_by": "signed"})
        fig = head_heatmap(scores, "signed", f"{task}: ranking, known kinds marked", marks)
        with atomic(store / f"heatmap_{safe_name(task)}.html") as tmp:  # a task name, made safe
            fig.write_html(tmp, include_plotlyjs="cdn")


def or_missing(fn, path: Path, *args) -> list[str]:
    """A section's lines (``fn(*args)``), or one line saying ``path`` is not there yet."""
    if not path.exists():
        return [f"*Not measured yet: {md_code(path)} is missing (`make heads`).*", ""]
    return fn(*args)


def retrieval_section(inp, total: int) -> list[str]:
    """The retrieval-heads lines from the retrieval run's ranking and significance table."""
    return retrieval(inp.retrieval(), inp.retrieval_significance(), inp.rankings, total)


def write_page(inp, store: Path, out_path: Path) -> None:
    m = Manifest.of(inp.manifest)
    total = m.model["n_layers"] * m.model["n_heads"]
    lines = [
        "# Which heads: specificity, known kinds, retrieval heads, stability",
        "",
        "Generated by `make heads` (`interp-heads study heads`: `configs/heads.toml` into "
        + md(inp.run)
        + " and `configs/heads_retrieval.toml` into "
        + md(inp.retrieval_run)
        + f", then this page) on {dt.date.today().isoformat()}, git {md('?' if m.git is None else m.git)}; model "
        f"{md(m.config['model'])} ({total} heads); every number below is read from that run "
        "folder. "
        "How each number is computed: the last section.",
        "",
        "## The Cognitive Mirrors figure with exclusive TopK (accuracy, mean [95% CI])",
        "",
        *seed_table(inp.run),
        "",
        "## Heads shared by all tasks",
        "",
        *sharing(inp.rankings),
        "",
        "## Cross-task specificity: mask one task's TopK, evaluate every task",
        "",
        *or_missing(specificity, store / "specificity.csv", store),
        "## Known heads (embedded model)",
        "",
        *or_missing(lambda: known(inp.known(), inp.rankings, total), inp.known_path),
        "",
        "## Retrieval heads (Wu et al. 2024)",
        "",
        *or_missing(lambda: retrieval_section(inp, total), inp.retrieval_path),
        "",
        "## Split-half stability of each ranking",
        "",
        *or_missing(stability, store / "stability.csv", store),
        "",
        METHOD,
    ]
    if inp.known_path.exists() and inp.retrieval_path.exists():
        heatmaps(inp, store)
    from interp_heads.report import build_report

    build_report(inp.run)  # index.html gains the stability and specificity sections
    write_file(out_path, "\n".join(lines))
