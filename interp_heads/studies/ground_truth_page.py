"""docs/ground_truth.md and its figure, from the ground_truth study's folder (``studies.ground_truth``).

The figure: each method's ROC AUC against the true necessary heads (one point per zoo model and
ablation kind), the sufficient-set search's heads over the true minimum, and the null
calibration's false-positive rate and power per verdict rule (from its CSV, or "not measured
yet"). Below it one table per zoo model. Every sentence is made from the tables' numbers.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from interp_heads.store.pages import page_folder
from interp_heads.store.pages import write_page as write_file

FIGURE = "ground_truth"
TABLES = ("model", "truth", "heads", "optimal", "methods", "search", "subsets")
DEFAULT = "atp"  # attribution.api.default_method on a task with corrupted prompts (every zoo task)


AT_N, AT_DRAWS, AT_EFFECT = 24, 5, 1.0  # the calibration row the figure shows (the pages' n)


def _calibration(path: Path) -> pd.DataFrame | None:
    """Per verdict rule, from the null calibration (``bench.checks.calibration``'s JSON, read by
    ``sweep.verdict.load_calibration``): the worst false-positive rate over the null kinds and
    the power against a drop of :data:`AT_EFFECT`, at :data:`AT_N` examples and
    :data:`AT_DRAWS` draws. None when there is no calibration."""
    from interp_heads.sweep.verdict import load_calibration

    cal = load_calibration(path) if path.is_file() else None
    rows = [r for r in (cal or {}).get("rows", [])
            if int(r["n"]) == AT_N and int(r["draws"]) == AT_DRAWS]  # fmt: skip
    out = []
    for rule in dict.fromkeys(r["rule"] for r in rows):
        fpr = [r["fpr"] for r in rows if r["rule"] == rule and "fpr" in r]
        power = [r["power"] for r in rows if r["rule"] == rule and r["kind"] == "power"
                 and float(r.get("effect", -1)) == AT_EFFECT]  # fmt: skip
        if fpr and power:
            out.append({"rule": rule, "false_positive_rate": max(fpr), "power": power[0]})
    return pd.DataFrame(out) if out else None


def figure(methods: pd.DataFrame, search: pd.DataFrame, calibration: pd.DataFrame | None):
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=3, subplot_titles=(
        "ROC AUC against the true necessary heads", "search: heads over the true minimum",
        "verdict rules: false-positive rate, power"))  # fmt: skip
    scored = methods[methods.error == ""].dropna(subset=["roc_auc"])
    for model, grp in scored.groupby("model", sort=False):
        fig.add_trace(go.Box(x=grp.method, y=grp.roc_auc, name=model, boxpoints="all",
                             jitter=0.3, legendgroup=model), row=1, col=1)  # fmt: skip
    found = search[search.error == ""]
    for kind, grp in found.groupby("kind", sort=False):
        fig.add_trace(go.Bar(x=grp.model, y=grp.heads_over, name=f"search, {kind}"), row=1, col=2)
    if calibration is None:
        fig.add_annotation(text="not measured yet", xref="x3 domain", yref="y3 domain", x=0.5,
                           y=0.5, showarrow=False, font={"size": 16})  # fmt: skip
    else:
        for col in ("false_positive_rate", "power"):
            fig.add_trace(go.Bar(x=calibration.rule, y=calibration[col], name=col), row=1, col=3)
    fig.update_yaxes(range=[0, 1.02], row=1, col=1)
    fig.update_layout(width=1500, height=520, boxmode="group", template="plotly_white")
    return fig


def _fmt(v, spec=".2f") -> str:
    return "n/a" if v is None or (isinstance(v, float) and v != v) else format(v, spec)


def _sets(cell: str, shown: int = 3) -> str:
    """The first ``shown`` minimum sets of a table cell (``" | "``-joined) and how many in all."""
    sets = cell.split(" | ")
    more = f" (+{len(sets) - shown} more, {len(sets)} sets)" if len(sets) > shown else ""
    return " / ".join(sets[:shown]) + more


def model_section(name: str, info: dict, t: dict[str, pd.DataFrame]) -> list[str]:
    """One zoo model's table and sentences."""
    from interp_heads.zoo.induction import summary as induction_summary

    truth = t["truth"][t["truth"].model == name]
    methods = t["methods"][t["methods"].model == name]
    search = t["search"][t["search"].model == name].set_index("kind")
    row = t["model"][t["model"].model == name].iloc[0]
    lines = [
        f"## {name}", "",
        f"Task `{row.task}`, {int(row.n_layers)} layers x {int(row.n_heads_per_layer)} heads; "
        f"held-out accuracy {info['held_out_accuracy']:.3f}; trained in "
        f"{info['train_seconds']:.0f} s; weights SHA-256 `{info['weights_sha256'][:16]}`; truth "
        f"over {int(truth.n_prompts.iloc[0])} held-out prompts in {row.truth_seconds:.0f} s.",
        "",
        *([induction_summary(info["induction_scores"]), ""] if "induction_scores" in info else []),
        "| ablation | true minimum (heads) | minimum sets | f | default (atp) ROC AUC | best method "
        "(ROC AUC) | search found | heads over | 1-minimal |",
        "|---|---|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    for r in truth.itertuples(index=False):
        m = methods[(methods.kind == r.kind) & (methods.error == "")]
        default = m[m.method == DEFAULT].roc_auc
        best = m.dropna(subset=["roc_auc"]).sort_values("roc_auc", ascending=False).head(1)
        s = search.loc[r.kind] if r.kind in search.index else None
        searched = s is not None and not s.error
        lines.append(
            f"| {r.kind} | {r.min_size} | {_sets(r.minimum_sets)} "
            f"| {r.minimum_f:.2f} "
            f"| {_fmt(default.iloc[0] if len(default) else None)} "
            f"| {best.method.iloc[0] if len(best) else 'n/a'} "
            f"({_fmt(best.roc_auc.iloc[0] if len(best) else None)}) "
            f"| {int(s.found_size) if searched else 'not searched'} "
            f"| {int(s.heads_over) if searched else ''} | {s.one_minimal if searched else ''} |"
        )
    lines += ["", *sentences(name, truth, methods, search), ""]
    return lines


def sentences(name, truth, methods, search) -> list[str]:
    out = []
    ok = methods[methods.error == ""].dropna(subset=["roc_auc"])
    default = ok[ok.method == DEFAULT]
    if len(default):
        hit = default[default.roc_auc >= 0.9]
        kinds = ", ".join(hit.kind) or "none"
        out.append(f"- The default method ({DEFAULT}) reaches ROC AUC >= 0.9 under {len(hit)} of "
                   f"{len(default)} ablation kinds ({kinds}).")  # fmt: skip
    low = ok.groupby("method").roc_auc.max()
    fail = ", ".join(f"{m} ({v:.2f})" for m, v in low[low < 0.9].items())
    out.append(f"- Methods below ROC AUC 0.9 under every kind: {fail or 'none'}.")
    nec = truth.set_index("kind").necessary
    every = [k for k in nec.index if str(nec[k]).count("L") == int(truth.n_heads.iloc[0])]
    if every:
        out.append(f"- Under {', '.join(every)} every head is in the minimum sufficient set, so no "
                   "ranking can be scored by ROC there (no negative head).")  # fmt: skip
    s = search[search.error == ""] if len(search) else search
    if len(s):
        near = int((s.heads_over <= 1).sum())
        out.append(f"- The search ends within 1 head of the true minimum under {near} of {len(s)} "
                   f"ablations; its set is 1-minimal under {int(s.one_minimal.astype(str).eq('True').sum())}.")  # fmt: skip
    errors = methods[methods.error != ""].drop_duplicates("method")
    for r in errors.itertuples(index=False):
        out.append(f"- {r.method}: not scored ({r.error}).")
    return out


def write_page(folder: Path, docs: Path, calibration_path: Path) -> list[Path]:
    t = read_tables(folder)
    manifest = t["manifest"]
    calibration = _calibration(calibration_path)
    page_folder(docs)
    page, written, image = docs / "ground_truth.md", [], None
    if len(t["methods"]):
        from interp_heads.figures.static import StaticExportError, write_static

        try:
            written += write_static({FIGURE: figure(t["methods"], t["search"], calibration)},
                                    docs / "figures", ["svg"])  # fmt: skip
            image = Path(os.path.relpath(written[-1].resolve(), page.resolve().parent)).as_posix()
        except StaticExportError as exc:
            print(f"no static figure: {exc}")
    lines = [
        "# Ground truth: every method scored against heads known exactly", "",
        f"Generated by `interp-heads study ground_truth` (size `{manifest['size']}`, "
        f"{manifest['seconds'] / 60:.1f} min, `interp_heads/studies/ground_truth.py`) from "
        f"`{folder.as_posix()}`.", "",
    ]  # fmt: skip
    if image:
        lines += [
            f"![ROC AUC per method, search heads over the true minimum, rule calibration]({image})",
            "",
        ]
    cal = ("not measured yet" if calibration is None else "; ".join(
        f"{r.rule}: false-positive rate {r.false_positive_rate:.3f}, power {r.power:.2f}"
        for r in calibration.itertuples(index=False)) + f" (worst null kind; power against a drop "
        f"of {AT_EFFECT:g} with heavy-tailed RandomK draws; n = {AT_N}, {AT_DRAWS} draws; "
        "docs/calibration.md)")  # fmt: skip
    lines += [
        "Truth: every kept head set evaluated on held-out prompts under teacher forcing, every "
        "other head ablated (zero, mean, position_mean, resample, counterfactual); the true "
        "minimum is the smallest kept set with f >= 0.9 on the answer's log-prob; a head is "
        "necessary when it is in a minimum set (the positives ROC AUC is taken against).", "",
        f"Verdict rules' false-positive rate and power: {cal}.", "",
    ]  # fmt: skip
    for name, info in manifest["models"].items():
        if info.get("refused"):
            lines += [f"## {name}", "", f"Refused: {info['refused']}", ""]
            continue
        lines += model_section(name, info, t)
    write_file(page, "\n".join(lines) + "\n")
    return [page, *written]


def read_tables(folder: Path) -> dict[str, pd.DataFrame]:
    """Every scored model's tables, concatenated per table."""
    from interp_heads.run import Run

    manifest = Run.at(folder).need("manifest")
    out = {t: [] for t in TABLES}
    for name, entry in manifest["models"].items():
        if entry.get("refused"):
            continue
        for t in TABLES:
            frame = pd.read_csv(folder / "models" / name / f"{t}.csv")
            if "error" in frame:
                frame["error"] = frame["error"].fillna("").astype(str)
            out[t].append(frame)
    frames = {t: pd.concat(v, ignore_index=True) if v else pd.DataFrame() for t, v in out.items()}
    frames["manifest"] = manifest
    return frames
