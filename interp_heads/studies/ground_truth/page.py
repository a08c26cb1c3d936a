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

from interp_heads.figures.escape import md, md_code, md_link
from interp_heads.store.pages import page_folder
from interp_heads.store.pages import write_page as write_file

FIGURE = "ground_truth"
TABLES = ("model", "truth", "heads", "optimal", "methods", "search", "subsets")
DEFAULT = "atp"  # attribution.api.default_method on a task with corrupted prompts (every zoo task)

# the study's own keys in its folder's manifest.json (beside ``versions``), which the page reads
STUDY, SIZE, N_PROMPTS_KEY, MODELS, SECONDS, WORK_SECONDS, REAL_INDUCTION_KEY = (
    "study", "size", "n_prompts", "models", "seconds", "work_seconds", "real_induction")  # fmt: skip


AT_N, AT_DRAWS, AT_EFFECT = 24, 5, 1.0  # the calibration row the figure shows (the pages' n)
AT_ZOO = 0.7  # the trained models' bin of true drops the figure shows (0.7 to 1)


def _calibration(path: Path) -> pd.DataFrame | None:
    """Per verdict rule, from the null calibration (``bench.checks.calibration``'s JSON, read by
    ``sweep.verdict.load_calibration``): the worst false-positive rate over the null kinds and
    the power against a drop of :data:`AT_EFFECT`, at :data:`AT_N` examples and
    :data:`AT_DRAWS` draws; and, where measured, the power on the trained zoo models at true drops
    from :data:`AT_ZOO` (``zoo.planted_power``). None when there is no calibration."""
    from interp_heads.sweep.verdict import load_calibration

    cal = load_calibration(path) if path.is_file() else None
    rows = [r for r in (cal or {}).get("rows", [])
            if int(r["n"]) == AT_N and int(r["draws"]) == AT_DRAWS]  # fmt: skip
    out = []
    for rule in dict.fromkeys(r["rule"] for r in rows):
        fpr = [r["fpr"] for r in rows if r["rule"] == rule and "fpr" in r]
        power = [r["power"] for r in rows if r["rule"] == rule and r["kind"] == "power"
                 and float(r.get("effect", -1)) == AT_EFFECT]  # fmt: skip
        zoo = [r["power"] for r in rows if r["rule"] == rule and r["kind"] == "zoo_power"
               and float(r.get("effect", -1)) == AT_ZOO]  # fmt: skip
        if fpr and power:
            out.append({"rule": rule, "false_positive_rate": max(fpr), "power": power[0],
                        "power_trained": zoo[0] if zoo else float("nan")})  # fmt: skip
    return pd.DataFrame(out) if out else None


def _minutes(seconds: float | int, work: float | int | None) -> str:
    """The study's time: what its parts took when done (``work``), and this invocation's
    ``seconds`` when they differ (a resumed study redoes nothing)."""
    now = seconds / 60
    if work is None or abs(work / 60 - now) < 0.05:
        return f"{now:.1f} min"
    return f"{work / 60:.1f} min of work; this invocation {now:.1f} min"


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
        for col in ("false_positive_rate", "power", "power_trained"):
            fig.add_trace(go.Bar(x=calibration.rule, y=calibration[col], name=col), row=1, col=3)
    fig.update_yaxes(range=[0, 1.02], row=1, col=1)
    fig.update_layout(width=1500, height=520, boxmode="group", template="plotly_white")
    return fig


def _fmt(v, spec=".2f") -> str:
    return "n/a" if v is None or (isinstance(v, float) and v != v) else format(v, spec)


def _sets(cell: str, shown: int = 3) -> str:
    """The first ``shown`` minimum sets of a table cell (``" | "``-joined) and how many in all."""
    sets = str(cell).split(" | ")
    more = f" (+{len(sets) - shown} more, {len(sets)} sets)" if len(sets) > shown else ""
    return " / ".join(map(md, sets[:shown])) + more


def model_section(name: str, info: dict, t: dict[str, pd.DataFrame]) -> list[str]:
    """One zoo model's table and sentences."""
    from interp_heads.zoo.induction import summary as induction_summary

    truth = t["truth"][t["truth"].model == name]
    methods = t["methods"][t["methods"].model == name]
    search = t["search"][t["search"].model == name].set_index("kind")
    row = t["model"][t["model"].model == name].iloc[0]
    lines = [
        f"## {md(name)}", "",
        f"Task {md_code(row.task)}, {int(row.n_layers)} layers x {int(row.n_heads_per_layer)} heads; "
        f"held-out accuracy {info['held_out_accuracy']:.3f}; trained in "
        f"{info['train_seconds']:.0f} s; weights SHA-256 {md_code(str(info['weights_sha256'])[:16])}; truth "
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
            f"| {md(r.kind)} | {md(r.min_size)} | {_sets(r.minimum_sets)} "
            f"| {r.minimum_f:.2f} "
            f"| {_fmt(default.iloc[0] if len(default) else None)} "
            f"| {md(best.method.iloc[0]) if len(best) else 'n/a'} "
            f"({_fmt(best.roc_auc.iloc[0] if len(best) else None)}) "
            f"| {int(s.found_size) if searched else 'not searched'} "
            f"| {int(s.heads_over) if searched else ''} | {md(s.one_minimal) if searched else ''} |"
        )
    lines += ["", *sentences(name, truth, methods, search), ""]
    return lines


def sentences(name, truth, methods, search) -> list[str]:
    out = []
    ok = methods[methods.error == ""].dropna(subset=["roc_auc"])
    default = ok[ok.method == DEFAULT]
    if len(default):
        hit = default[default.roc_auc >= 0.9]
        kinds = ", ".join(map(md, hit.kind)) or "none"
        out.append(f"- The default method ({DEFAULT}) reaches ROC AUC >= 0.9 under {len(hit)} of "
                   f"{len(default)} ablation kinds ({kinds}).")  # fmt: skip
    low = ok.groupby("method").roc_auc.max()
    fail = ", ".join(f"{md(m)} ({v:.2f})" for m, v in low[low < 0.9].items())
    out.append(f"- Methods below ROC AUC 0.9 under every kind: {fail or 'none'}.")
    nec = truth.set_index("kind").necessary
    every = [k for k in nec.index if str(nec[k]).count("L") == int(truth.n_heads.iloc[0])]
    if every:
        out.append(f"- Under {', '.join(map(md, every))} every head is in the minimum sufficient set, so no "
                   "ranking can be scored by ROC there (no negative head).")  # fmt: skip
    s = search[search.error == ""] if len(search) else search
    if len(s):
        near = int((s.heads_over <= 1).sum())
        out.append(f"- The search ends within 1 head of the true minimum under {near} of {len(s)} "
                   f"ablations; its set is 1-minimal under {int(s.one_minimal.astype(str).eq('True').sum())}.")  # fmt: skip
    errors = methods[methods.error != ""].drop_duplicates("method")
    for r in errors.itertuples(index=False):
        out.append(f"- {md(r.method)}: not scored ({md(r.error)}).")
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
        f"Generated by `interp-heads study ground_truth` (size {md_code(manifest.get(SIZE))}, "
        f"{_minutes(manifest.get(SECONDS), manifest.get(WORK_SECONDS))}, "
        "`interp_heads/studies/ground_truth/`) from "
        f"{md_code(folder.as_posix())}.", "",
    ]  # fmt: skip
    if image:
        lines += [
            "![ROC AUC per method, search heads over the true minimum, rule calibration]"
            f"({md_link(image)})",
            "",
        ]
    cal = ("not measured yet" if calibration is None else "; ".join(
        f"{md(r.rule)}: false-positive rate {r.false_positive_rate:.3f}, power {r.power:.2f}"
        + (f", on trained models {r.power_trained:.2f}" if r.power_trained == r.power_trained
           else "")
        for r in calibration.itertuples(index=False)) + f" (worst null kind; power against a drop "
        f"of {AT_EFFECT:g} with heavy-tailed RandomK draws, and on the trained zoo models against "
        f"a true drop of {AT_ZOO:g} to 1; n = {AT_N}, {AT_DRAWS} draws; "
        "docs/calibration.md)")  # fmt: skip
    lines += [
        "Truth: every kept head set evaluated on held-out prompts under teacher forcing, every "
        "other head ablated (zero, mean, position_mean, resample, counterfactual); the true "
        "minimum is the smallest kept set with f >= 0.9 on the answer's log-prob; a head is "
        "necessary when it is in a minimum set (the positives ROC AUC is taken against).", "",
        f"Verdict rules' false-positive rate and power: {cal}.", "",
    ]  # fmt: skip
    for name, info in manifest.get(MODELS).items():
        if info.get("refused"):
            lines += [f"## {md(name)}", "", f"Refused: {md(info['refused'])}", ""]
            continue
        lines += model_section(name, info, t)
    if manifest.get(REAL_INDUCTION_KEY) is not None and (folder / "real_induction.json").is_file():
        from interp_heads.store.readback import read_json

        lines += real_section(read_json(folder / "real_induction.json"))
    write_file(page, "\n".join(lines) + "\n")
    return [page, *written]


TARGET_OVERLAP = 6  # of TopK-8 among the detector's induction heads


def real_section(r: dict) -> list[str]:
    """The real-weights induction check (``zoo.real_induction``): one table and sentences."""
    import numpy as np

    det, eff = np.asarray(r["detector_scores"]), np.asarray(r["patching_effects"])
    truth, dets, pats = set(r["truth"]), set(r["detector_heads"]), set(r["patching_heads"])
    union = dets | pats

    def cell(heads) -> str:
        return ", ".join(heads) or "none"

    def scores(label: str) -> str:
        layer, head = (int(x) for x in label[1:].split("H"))
        return f"{label} (detector {det[layer, head]:.2f}, patching {eff[layer, head]:.2f})"

    secs = r["seconds"]
    lines = [
        f"## Real weights: induction on {r['model']}", "",
        f"{r['n']} sequences of a block of {r['length']} random word tokens repeated once (seed "
        f"{r['seed']}); the corrupted sequence's second block is fresh tokens, so induction has "
        f"nothing to copy. Next-token log-prob on the copy: clean {r['clean_logprob']:.2f}, "
        f"corrupted {r['corrupted_logprob']:.2f}. Detector: TransformerLens' "
        f"`detect_head(..., \"induction_head\")` >= {r['detector_threshold']:g} (a perfect "
        f"induction head scores 0.5: the first block's rows have no stripe). Patching: "
        f"TransformerLens' `get_act_patch_attn_head_out_all_pos`, each head's output from the "
        f"corrupted run into the clean run, drop of that log-prob normalised (clean 0, corrupted "
        f"1) >= {r['patching_threshold']:g} (the most negative head: {r['min_patching_effect']:.3f}). "
        f"Truth: the heads both name. {secs['total']:.0f} s (detector {secs['detector']:.0f} s, "
        f"patching {secs['patching']:.0f} s, ranking {secs['ranking']:.0f} s).", "",
        "| heads of the model | detector | patching | both (truth) | agreement (both / either) "
        f"| default ({r['method']}) top-{r['k']} | in the truth | p | in the detector's | p |",
        "|---|---|---|---|---|---|---|---|---|---|",
        f"| {r['n_heads']} | {len(dets)} | {len(pats)} | {len(truth)} "
        f"| {_fmt(len(truth) / len(union) if union else None)} | {cell(r['topk'])} "
        f"| {r['overlap']} | {r['p']:.2g} | {r['overlap_detector']} | {r['p_detector']:.2g} |",
        "",
        f"- Truth ({len(truth)}): {cell(sorted(truth, key=_order))}.",
        f"- Detector only: {cell(sorted(dets - pats, key=_order))}; patching only: "
        f"{cell(sorted(pats - dets, key=_order))}.",
        "- p: the hypergeometric chance that "
        f"{r['k']} heads drawn at random from the {r['n_heads']} hold at least that many of the "
        "set (`scipy.stats.hypergeom.sf`).",
    ]  # fmt: skip
    met = r["overlap_detector"] >= TARGET_OVERLAP
    lines.append(f"- Target: at least {TARGET_OVERLAP} of top-{r['k']} among the detector's heads: "
                 f"{'met' if met else 'missed'} ({r['overlap_detector']}).")  # fmt: skip
    if not met:
        lines.append(
            "- Why: on TransformerLens' measure the model's induction heads score low (the mean "
            "is over every row, the first block's too, and a head's attention parked on the "
            "first token counts against it), so few reach the cut; the top heads' own detector "
            "scores are below. Top-k heads among the detector's heads at other cuts (not the "
            f"pre-set one): {_cuts(det, r)}."
        )  # fmt: skip
    missed = [h for h in r["topk"] if h not in truth]
    if missed:
        lines.append(f"- Top-{r['k']} heads outside the truth: "
                     f"{'; '.join(scores(h) for h in missed)}.")  # fmt: skip
    absent = [h for h in sorted(truth, key=_order) if h not in r["topk"]]
    if absent:
        lines.append(f"- Truth heads the top-{r['k']} leaves out: "
                     f"{'; '.join(scores(h) for h in absent)}.")  # fmt: skip
    return [*lines, ""]


CUTS = (0.1, 0.2, 0.3, 0.4)


def _cuts(det, r: dict) -> str:
    """At each detector cut of :data:`CUTS`: the detector's heads, the top-k among them, the
    hypergeometric p."""
    from interp_heads.zoo.real_induction import hypergeom_p

    out = []
    for cut in CUTS:
        n_det = int((det >= cut).sum())
        hits = sum(det[_order(h)] >= cut for h in r["topk"])
        p = hypergeom_p(int(hits), r["n_heads"], n_det, r["k"])
        out.append(f"{cut:g}: {hits} of {r['k']} ({n_det} heads, p {p:.2g})")
    return "; ".join(out)


def _order(label: str) -> tuple[int, int]:
    layer, head = label[1:].split("H")
    return int(layer), int(head)


def read_tables(folder: Path) -> dict[str, pd.DataFrame]:
    """Every scored model's tables, concatenated per table."""
    from interp_heads.run import Manifest, Run

    manifest = Manifest.of(Run.at(folder).need("manifest"))
    out = {t: [] for t in TABLES}
    for name, entry in manifest.get(MODELS).items():
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
