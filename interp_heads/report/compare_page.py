"""The Cognitive Mirrors protocol beside the causal one: docs/compare.md from their run folders.

    make compare   # interp-heads run each config of VARIANTS into runs/compare/<name>, then:
    python -m interp_heads.report.compare_page runs/compare [--page docs/compare.md]

``seed`` is ``configs/cognitive_mirrors.toml`` (the Cognitive Mirrors protocol, on the four
built-in tasks in the study's prompt format); ``causal`` (``configs/compare/causal.toml``) is the
same tasks in their plain completion format, filtered to the correctly answered ones, under this
toolkit's protocol (``ablation_atp`` ranking, mean ablation at every position, first-line answers,
gold reference, three RandomK draws); the other three runs change one of the study's choices
alone (positions last -> all, scale -> mean, the accuracy rule's references -> all gold). Each run
is an ordinary resumable run folder; this page needs no model: every number is read from them.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

# run folder -> its config (``make compare`` runs each into runs/compare/<name>)
VARIANTS = {
    "seed": "configs/cognitive_mirrors.toml",
    "causal": "configs/compare/causal.toml",
    "positions_all": "configs/compare/positions_all.toml",
    "mean_ablation": "configs/compare/mean_ablation.toml",
    "gold_reference": "configs/compare/gold_reference.toml",
}
CHANGED = {
    "seed": "the seed's protocol (configs/cognitive_mirrors.toml)",
    "causal": "the causal protocol (ablation_atp ranking, mean ablation at all positions, "
    "first line of 6 tokens, gold reference, 3 RandomK draws)",
    "positions_all": "seed protocol, mask at every position (positions = all)",
    "mean_ablation": "seed protocol, mean ablation instead of the 1e-4 scale",
    "gold_reference": "seed protocol, every part of the accuracy rule against the gold answer "
    "(cognitive_mirrors_accuracy_gold; no COMET)",
}


# --------------------------------------------------------------------------- the page
def _load(out: Path, name: str) -> dict:
    d = out / name
    return {
        "manifest": json.loads((d / "manifest.json").read_text()),
        "summary": pd.read_csv(d / "summary.csv"),
        "ranking": pd.read_csv(d / "ranking.csv"),
    }


def _fmt(x) -> str:
    return "" if pd.isna(x) else f"{x:.3f}"


def _md(frame: pd.DataFrame) -> str:
    cols = list(frame.columns)
    rows = ["| " + " | ".join(map(str, cols)) + " |", "|" + "---|" * len(cols)]
    for r in frame.itertuples(index=False):
        rows.append(
            "| "
            + " | ".join(_fmt(v) if isinstance(v, float) else str(v).replace("|", "\\|") for v in r)
            + " |"
        )
    return "\n".join(rows)


def figure_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Per task, metric and k: the unmasked value, TopK and RandomK (mean over draws)."""
    s = summary[summary.selection.isin(["TopK", "RandomK"])]
    wide = s.pivot_table(index=["task", "label", "k"], columns="selection", values="mean")
    base = summary[summary.selection == "baseline"].set_index(["task", "label"])["mean"]
    wide = wide.reset_index()
    wide.insert(
        3, "unmasked", [base.get((t, lbl)) for t, lbl in zip(wide.task, wide.label, strict=True)]
    )
    wide["TopK - RandomK"] = wide["TopK"] - wide["RandomK"]
    return wide.rename(columns={"label": "metric"})


def agreement(probe: pd.DataFrame, causal: pd.DataFrame, ks: list[int]) -> pd.DataFrame:
    """Per task: Spearman of the two rankings' ranks and the top-k overlap share at each k."""
    from scipy.stats import spearmanr

    rows = []
    for task, p in probe.groupby("task"):
        c = causal[causal.task == task].set_index("label")["rank"]
        p = p.set_index("label")["rank"]
        row = {"task": task, "Spearman": float(spearmanr(p, c.loc[p.index]).statistic)}
        top_p, top_c = p.sort_values(), c.sort_values()
        for k in ks:
            shared = set(top_p.index[:k]) & set(top_c.index[:k])
            row[f"top-{k} overlap"] = len(shared) / k
        rows.append(row)
    return pd.DataFrame(rows)


def variants_table(runs: dict) -> pd.DataFrame:
    """Each variant's TopK and RandomK, averaged over the four tasks, per metric and k."""
    rows = []
    for name, r in runs.items():
        t = figure_table(r["summary"])
        t = t[t.k.isin(_common_ks(runs))]
        for (metric, k), g in t.groupby(["metric", "k"]):
            rows.append(
                {
                    "run": name,
                    "metric": metric,
                    "k": int(k),
                    "unmasked": g.unmasked.mean(),
                    "TopK": g.TopK.mean(),
                    "RandomK": g.RandomK.mean(),
                    "TopK - RandomK": g["TopK - RandomK"].mean(),
                }
            )
    return pd.DataFrame(rows)


def _common_ks(runs: dict) -> list[int]:
    return sorted(set.intersection(*(set(r["manifest"]["ks"]) for r in runs.values())))


def page(out: Path) -> str:
    runs = {n: _load(out, n) for n in VARIANTS if (out / n / "summary.csv").exists()}
    missing = [n for n in VARIANTS if n not in runs]
    seed, parts = runs.get("seed"), ["# The seed's protocol beside the causal one", ""]
    parts += [
        "Generated by `make compare` (`interp_heads.report.compare_page`) from the run folders under "
        f"`{out}`; every number below is read from them. Runs:",
        "",
        *[f"- `{n}`: {CHANGED[n]}" for n in VARIANTS],
        "",
    ]
    if missing:
        parts += [f"Not run yet (no numbers): {', '.join(missing)}.", ""]
    if seed:
        p = seed["manifest"].get("probe") or {}
        parts += ["## The probe's held-out accuracy", ""]
        parts.append(_md(pd.DataFrame([{
            "probe": f"{p.get('kind')} at {p.get('position')!r}",
            "held-out accuracy": p.get("heldout_accuracy"), "chance": p.get("chance"),
            "train accuracy": p.get("train_accuracy"), "n train": p.get("n_train"),
            "n held-out": p.get("n_heldout"),
        }])))  # fmt: skip
        parts += ["", "Elbow k per task (masked beside the listed k): "
                  + ", ".join(f"{t}: {k}" for t, k in (seed["manifest"].get("elbow_k") or {}).items()), ""]  # fmt: skip
    for name in ("seed", "causal"):
        if name in runs:
            parts += [
                f"## Seed figure under `{name}`",
                "",
                _md(figure_table(runs[name]["summary"])),
                "",
            ]
    if seed and "causal" in runs:
        ks = _common_ks({"seed": seed, "causal": runs["causal"]})
        parts += [
            "## Does the probe ranking agree with the causal ranking?",
            "",
            "Spearman of the two rankings' ranks over all heads, and the share of the top k heads "
            "they share, per task (probe: `seed`; causal: `ablation_atp` of `causal`).",
            "",
            _md(agreement(seed["ranking"], runs["causal"]["ranking"], ks)),
            "",
        ]
    if len(runs) > 1:
        parts += [
            "## What each of the seed's choices changes",
            "",
            "Mean over the four tasks of each run's unmasked value, TopK and RandomK (one draw, "
            "three for `causal`) at the k every run masks.",
            "",
            _md(variants_table(runs)),
            "",
        ]
    return "\n".join(parts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="the folder holding the runs (runs/compare)")
    ap.add_argument("--page", type=Path, default=Path("docs/compare.md"))
    args = ap.parse_args(argv)
    args.page.write_text(page(args.out), encoding="utf-8")
    print(f"wrote {args.page}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
