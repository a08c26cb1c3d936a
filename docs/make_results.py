"""Write docs/results.md and its figures from the demo's run folder (``make demo`` calls this last).

    python docs/make_results.py runs/demo [--out docs/results.md] [--figures DIR]

The demo is one experiment with two k grids (``configs/seed_figure.toml``: ``ks``, the
Cognitive Mirrors figure's literal 16..128, and ``scaled_ks``, the same fractions of this model's
heads); the page gives each grid its own tables and figure, as two folders did before
(``python docs/make_results.py runs/demo runs/demo_scaled`` still reads two).

Every number on the page is read from the run folders (``manifest.json``, ``baseline.csv``,
``summary.parquet``, ``significance.csv``); the pass/fail marks are computed here from the
Cognitive Mirrors figure's claim (Ma et al. 2025): at the claim's k, TopK's accuracy drop is >= 3x
the mean RandomK drop and TopK's 95% interval lies below RandomK's, with enough examples and
random draws to decide (``interp_heads.sweep.stats.too_few``). The figures beside the page
(``docs/figures/results_literal_k.svg``, ``results_scaled_k.svg``: the same figure as the run's
interactive page, as SVG through kaleido) are what a reader of the repository sees without the
run folders.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import pandas as pd

from interp_heads.sweep import stats

CLAIM_RATIO = 3.0
FIGURES = {"default": "results_literal_k", "scaled": "results_scaled_k"}  # docs/figures/<name>.svg
# docs/make_heads.py (``make heads``) writes its section between these lines; kept on regeneration
HEADS_BEGIN = "<!-- begin: written by make heads (docs/make_heads.py); kept by make_results.py -->"
HEADS_END = "<!-- end: written by make heads -->"


def heads_block(text: str) -> str:
    """The ``make heads`` section of a results page, markers included ("" when absent)."""
    start, end = text.find(HEADS_BEGIN), text.find(HEADS_END)
    return text[start : end + len(HEADS_END)] if 0 <= start < end else ""


def with_heads_block(text: str, block: str, before: str = "## Reading the results") -> str:
    """``text`` with its ``make heads`` section replaced by ``block`` (placed before the
    hand-written notes, else at the end, when it has none)."""
    old = heads_block(text)
    if old:
        return text.replace(old, block)
    at = text.find(before)
    return (
        text[:at] + block + "\n\n" + text[at:]
        if at >= 0
        else text.rstrip("\n") + "\n\n" + block + "\n"
    )


def load(run: Path) -> dict:
    manifest = json.loads((run / "manifest.json").read_text())
    return {
        "dir": run,
        "manifest": manifest,
        "baseline": pd.read_csv(run / "baseline.csv"),
        "summary": pd.read_parquet(run / "summary.parquet"),
        "sig": pd.read_csv(run / "significance.csv"),
    }


def grid_views(r: dict) -> tuple[dict, dict | None]:
    """``(literal, scaled)``: the run restricted to each k grid of its config
    (``report.run.k_grids``); ``scaled`` is None for a run with one grid."""
    from interp_heads.report.run import k_grids

    grids = k_grids(r["manifest"])
    if "seed_figure_scaled" not in grids:
        return r, None

    def view(name: str) -> dict:
        ks = grids[name][1]
        keep = [0, *ks]
        return {
            **r,
            "manifest": {**r["manifest"], "ks": ks},
            "summary": r["summary"][r["summary"].k.isin(keep)],
            "sig": r["sig"][r["sig"].k.isin(keep)],
            "figure": name,
        }

    return view("seed_figure"), view("seed_figure_scaled")


def claim_rows(r: dict, k: int) -> list[dict]:
    s, sig = r["summary"], r["sig"]
    acc = s[s.metric == "accuracy"]
    out = []
    for task in dict.fromkeys(acc.task):
        cell = acc[(acc.task == task) & (acc.k == k)].set_index("selection")
        row = sig[
            (sig.task == task)
            & (sig.k == k)
            & (sig.metric == "accuracy")
            & (sig.control == "RandomK")
        ]
        if "TopK" not in cell.index or "RandomK" not in cell.index or row.empty:
            continue
        t, rnd, g = cell.loc["TopK"], cell.loc["RandomK"], row.iloc[0]
        few = stats.too_few(g.n_examples, g.n_draws)
        ratio_ok = g.control_drop <= 0 < g.top_drop or (
            g.control_drop > 0 and g.top_drop / g.control_drop >= CLAIM_RATIO
        )
        ok = ratio_ok and t.ci_high < rnd.ci_low
        out.append({
            "task": task, "k": k,
            "unmasked": f"{g.baseline:.2f}",
            "TopK": f"{t['mean']:.2f} [{t.ci_low:.2f}, {t.ci_high:.2f}]",
            "RandomK": f"{rnd['mean']:.2f} [{rnd.ci_low:.2f}, {rnd.ci_high:.2f}]",
            "TopK drop": f"{g.top_drop:.2f}", "RandomK drop": f"{g.control_drop:.2f}",
            "ratio": stats.drops_text(g.top_drop, g.control_drop),
            "TopK - RandomK [95% CI], p": f"{g['diff']:+.2f} [{g.diff_low:+.2f}, {g.diff_high:+.2f}]"
            + ("" if few else f", p {stats.format_p(g.p_value)}"),
            "claim holds": few or ("yes" if ok else "**no**"),
        })  # fmt: skip
    return out


def grid_table(r: dict, metric: str) -> pd.DataFrame:
    s = r["summary"]
    s = s[(s.metric == metric) & (s.selection != "baseline")]
    sig = r["sig"]
    rows = sig[(sig.metric == metric) & (sig.control == "RandomK")]
    marked = {(r.task, int(r.k)) for r in rows.itertuples() if stats.decided(r)}
    s = s.assign(
        cell=[
            f"{m:.2f} [{lo:.2f}, {hi:.2f}]"
            + (" *" if sel == "TopK" and (t, int(k)) in marked else "")
            for m, lo, hi, sel, t, k in zip(
                s["mean"], s.ci_low, s.ci_high, s.selection, s.task, s.k, strict=True
            )
        ]
    )
    wide = s.pivot_table(
        index=["task", "k"], columns="selection", values="cell", aggfunc="first"
    ).reset_index()
    wide.columns.name = None
    order = {t: i for i, t in enumerate(dict.fromkeys(s.task))}
    return wide.sort_values(["task", "k"], key=lambda c: c.map(order) if c.name == "task" else c)


def md(frame: pd.DataFrame | list[dict]) -> str:
    frame = pd.DataFrame(frame)
    if frame.empty:
        return "(no rows: the run has no TopK and RandomK at this k)"
    head = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|" + "---|" * len(frame.columns)
    body = [
        "| " + " | ".join("" if v != v else str(v) for v in row) + " |"
        for row in frame.itertuples(index=False)
    ]
    return "\n".join([head, rule, *body])


def _exact_note(r: dict) -> str:
    """The layers ablation_atp scored exactly, as its attribution entries record them."""
    if r["manifest"]["config"]["attribution"] != "ablation_atp":
        return ""
    entries = sorted((r["dir"] / "attribution").glob("*.json"))
    ns = {json.loads(p.read_text())["provenance"].get("exact_layers") or 0 for p in entries}
    if len(ns) != 1:
        return f" (exact layers per task: {sorted(ns)})"
    n = ns.pop()
    if not n:
        return " (first-order estimate only)"
    layers = "layer 0" if n == 1 else f"layers 0-{n - 1}"
    return f" (heads of {layers}: their exact mean-ablation drop)"


def setup_table(r: dict) -> str:
    c, m = r["manifest"]["config"], r["manifest"]
    n_heads = m["model"]["n_layers"] * m["model"]["n_heads"]
    rows = [
        ("model", f"{c['model']} ({m['model']['n_layers']} layers x {m['model']['n_heads']} heads = {n_heads} heads)"),
        ("tasks", ", ".join(c["tasks"])),
        ("prompt format", ", ".join(f"{t}: {f}" for t, f in (m.get("fmt") or {}).items()) if isinstance(m.get("fmt"), dict) else str(m.get("fmt"))),
        ("attribution", f"{c['attribution']}{_exact_note(r)} on the first {c['n_rank']} correctly answered examples per task"),
        ("evaluation", f"up to {c['n_eval']} further correctly answered examples per task (disjoint from the rank set)"),
        ("ablation", f"{c['ablation']} on hook_z"),
        (
            "selections",
            ", ".join(c["selections"])
            + f"; {c['seeds']} random draws per k"
            + (
                "; RandomK draws from the heads outside TopK of the same k (`exclude_top`)"
                if c.get("exclude_top")
                else "; RandomK draws from all heads"
            ),
        ),
        ("ks", ", ".join(map(str, m["ks"])) + " (" + ", ".join(f"{k / n_heads:.1%}" for k in m["ks"]) + " of the heads)"),
        ("metrics", "; ".join(m.get("metrics", {}).values())),
        ("greedy generation", f"at most {c['max_new_tokens']} new tokens, stopped at the end of the first line"),
        ("run time", f"{m['timings'].get('total', float('nan')) / 60:.1f} min (sweep {m['timings'].get('sweep', float('nan')) / 60:.1f} min)"),
        ("commit", str(m.get("git"))),
    ]  # fmt: skip
    return md(pd.DataFrame(rows, columns=["item", "value"]))


def write_figures(runs: dict[str, dict], folder: Path) -> dict[str, Path]:
    """Each run's Cognitive Mirrors figure (as on its page) as ``folder/<FIGURES[key]>.svg``."""
    from interp_heads.figures.static import write_static
    from interp_heads.report import load_run, make_figures, page

    figs = {}
    for key, r in runs.items():
        drawn = make_figures(page.relabelled(page.current(load_run(r["dir"]))))
        name = r.get("figure", "seed_figure")
        if name in drawn:
            figs[FIGURES[key]] = drawn[name]
    write_static(figs, folder, ["svg"])
    return {key: folder / f"{FIGURES[key]}.svg" for key in runs if FIGURES[key] in figs}


def _figure(figures: dict[str, str], key: str, what: str) -> list[str]:
    """A markdown image line for ``figures[key]`` (a path relative to the page), when there is one."""
    return [f"![{what}]({figures[key]})", ""] if key in figures else []


def render(default: dict, scaled: dict | None, figures: dict[str, str] | None = None) -> str:
    """The page; ``figures``: ``{"default"|"scaled": image path relative to the page}``."""
    figures = figures or {}
    parts = [
        "# Results on SmolLM2-135M-Instruct",
        "",
        "Regenerated by `make demo` (`configs/seed_figure.toml` -> `runs/demo`: one run with both k "
        "grids, literal and scaled, then `python docs/make_results.py runs/demo`, which also writes "
        "the figures on this page to `docs/figures/`). `make demo` leaves the "
        "interactive page in `runs/demo/index.html` (significance table, per-head heatmaps, the "
        "retrieval length x depth heatmap, every generation). All numbers were measured on the "
        "2-core CPU machine; nothing on this page is typed by hand.",
        "",
        "## The Cognitive Mirrors figure's claim at k = 32 (the paper's literal k)",
        "",
        f"Claim: masking the TopK heads collapses the task while RandomK barely moves it; checked as TopK's "
        f"accuracy drop >= {CLAIM_RATIO:.0f}x the mean RandomK drop **and** TopK's 95% interval below RandomK's. "
        "Difference: paired bootstrap over examples and random draws (`interp_heads.sweep.stats.significance`); "
        f"a verdict needs {stats.MIN_EXAMPLES} evaluated examples and {stats.MIN_DRAWS} random draws.",
        "",
        *_figure(
            figures,
            "default",
            "The Cognitive Mirrors figure on SmolLM2, literal k: "
            "score against masked heads, TopK solid, RandomK dashed, 95% bands",
        ),  # fmt: skip
        md(claim_rows(default, 32)),
        "",
    ]
    if scaled is not None:
        n_heads = scaled["manifest"]["model"]["n_layers"] * scaled["manifest"]["model"]["n_heads"]
        ks = scaled["manifest"]["ks"]
        k8 = min(ks, key=lambda k: abs(k / n_heads - 32 / 1024))
        parts += [
            f"## The same claim at the paper's *fraction* of heads (k = {k8}, {k8 / n_heads:.1%} of {n_heads})",
            "",
            *_figure(
                figures,
                "scaled",
                "The Cognitive Mirrors figure on SmolLM2, k scaled to "
                "the paper's fractions of heads",
            ),  # fmt: skip
            md(claim_rows(scaled, k8)),
            "",
        ]
    parts += [
        "## Setup (literal k)",
        "",
        setup_table(default),
        "",
        "## Baseline (unmasked)",
        "",
        md(default["baseline"].round({"accuracy": 3})),
        "",
        "## Accuracy, mean [95% CI], literal k (`*`: TopK significantly different from RandomK, with enough examples and draws to say so)",
        "",
        md(grid_table(default, "accuracy")),
        "",
    ]
    metrics = [m for m in dict.fromkeys(default["summary"].metric) if m != "accuracy"]
    for m in metrics:
        label = default["summary"].loc[default["summary"].metric == m, "label"].iloc[0]
        parts += [f"## {label}, mean [95% CI], literal k", "", md(grid_table(default, m)), ""]
    if scaled is not None:
        parts += [
            "## Setup (scaled k)",
            "",
            setup_table(scaled),
            "",
            "## Accuracy, mean [95% CI], scaled k",
            "",
            md(grid_table(scaled, "accuracy")),
            "",
        ]
    parts += ["## Significance, every k (accuracy; TopK minus each random control)", ""]
    sig = default["sig"][default["sig"].metric == "accuracy"]
    parts += [
        md(
            [
                {
                    "task": r.task,
                    "k": r.k,
                    "control": r.control,
                    "TopK - control [95% CI]": f"{r.diff:+.2f} [{r.diff_low:+.2f}, {r.diff_high:+.2f}]",
                    "p": stats.format_p(r.p_value)
                    if not stats.too_few(r.n_examples, r.n_draws)
                    else "",
                    "verdict": stats.verdict(r),
                    "drop ratio": stats.drops_text(r.top_drop, r.control_drop),
                }
                for r in sig.itertuples(index=False)
            ]
        ),
        "",
    ]
    return "\n".join(parts) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("default", type=Path, help="the demo's run folder")
    ap.add_argument("scaled", type=Path, nargs="?", help="a second folder with the scaled k grid")
    ap.add_argument("--out", type=Path, default=Path(__file__).with_name("results.md"))
    ap.add_argument(
        "--notes",
        type=Path,
        default=Path(__file__).with_name("results_notes.md"),
        help="hand-written reading of the results, appended when present",
    )
    ap.add_argument(
        "--figures",
        type=Path,
        default=Path(__file__).with_name("figures"),
        help="folder for the page's static figures (SVG; needs kaleido and a Chromium)",
    )
    args = ap.parse_args()
    default, scaled = load(args.default), load(args.scaled) if args.scaled else None
    if scaled is None:
        default, scaled = grid_views(default)
    runs = {"default": default, **({"scaled": scaled} if scaled is not None else {})}
    images = write_figures(runs, args.figures)
    rel = {k: os.path.relpath(v.resolve(), args.out.resolve().parent) for k, v in images.items()}
    text = render(default, scaled, {k: Path(v).as_posix() for k, v in rel.items()})
    kept = heads_block(args.out.read_text()) if args.out.exists() else ""
    if kept:
        text += "\n" + kept + "\n"
    if args.notes.exists():
        text += "\n" + args.notes.read_text()
    args.out.write_text(text)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
