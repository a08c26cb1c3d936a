"""The comparison page on synthetic run folders (``studies.compare``, ``compare.tables``,
``compare.findings``, ``figures.protocols``): sweep tables built by ``sweep.stats`` from
hand-made records, written to tmp folders; the verdict's numbers against a hand computation, the
findings following the numbers, the figure's panels and line styles."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from interp_heads.studies import compare as cp
from interp_heads.studies.compare import tables as ct
from interp_heads.studies.compare.findings import findings
from interp_heads.sweep import stats

TASKS = ["retrieval", "knowledge_recall", "math_calculation", "inference"]
N_EX = 12


def _records(values: dict, draws: int, metric: str, label: str) -> list[tuple]:
    """``values[(task, selection, k)]`` = the score of every example (and draw)."""
    rows = []
    for (task, sel, k), v in values.items():
        seeds = range(draws) if sel == "RandomK" else [0]
        for s in seeds:
            rows += [(task, sel, k, s, metric, label, f"e{i}", v) for i in range(N_EX)]
    return rows


def make_run(
    folder, tops: dict, draws: int = 5, elbow: int | None = 8, lowk: float = 0.9, randomk=0.75
):
    """A run folder whose accuracy is 1.0 unmasked, ``tops[task]`` under TopK, ``randomk`` under
    every RandomK draw and ``lowk`` under LowK, at k = elbow and 32; a COMET-like second metric."""
    ks = sorted({32, *([elbow] if elbow else [])})
    rows = []
    for metric, label, scale in (("acc", "Accuracy", 1.0), ("cmt", "COMET stand-in", 0.8)):
        vals = {}
        for t in TASKS:
            vals[(t, "baseline", 0)] = scale
            for k in ks:
                vals.update({(t, "TopK", k): tops[t] * scale, (t, "RandomK", k): randomk * scale,
                             (t, "LowK", k): lowk * scale})  # fmt: skip
        rows += _records(vals, draws, metric, label)
    rec = pd.DataFrame(rows, columns=["task", "selection", "k", "seed", "metric", "label",
                                      "example_id", "value"])  # fmt: skip
    folder.mkdir(parents=True)
    stats.summarize(rec, n_boot=200).to_csv(folder / "summary.csv", index=False)
    stats.significance(rec, n_boot=200).to_csv(folder / "significance.csv", index=False)
    manifest = {"config": {"metrics": ["acc", "cmt"]},
                "elbow_k": {t: elbow for t in TASKS} if elbow else {}}  # fmt: skip
    (folder / "manifest.json").write_text(json.dumps(manifest))
    labels = [f"L{i // 4}H{i % 4}" for i in range(40)]
    pd.DataFrame(
        [(t, lbl, r + 1) for t in TASKS for r, lbl in enumerate(labels)],
        columns=["task", "label", "rank"],
    ).to_csv(folder / "ranking.csv", index=False)
    return folder


TOPS = {"retrieval": 0.25, "knowledge_recall": 0.5, "math_calculation": 0.25, "inference": 0.8}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("compare")
    make_run(folder / "seed", TOPS, draws=1)  # the study's single RandomK draw
    make_run(folder / "causal", TOPS, draws=5, elbow=16)
    return folder


def test_verdict_numbers_by_hand(runs):
    v = ct.verdict_frame(cp.load(runs / "causal"), "causal").set_index(["task", "point"])
    r = v.loc[("retrieval", "k = 32")]
    # unmasked 1.0, TopK 0.25, RandomK 0.75 on every example and draw: drops 0.75 and 0.25,
    # ratio 3.0; the difference -0.5 on every bootstrap replicate: interval [-0.5, -0.5]; every
    # example lower: the exact sign-flip p is its floor 2 ** (1 - n)
    assert (r.unmasked, r.TopK, r.RandomK, r.LowK) == pytest.approx((1.0, 0.25, 0.75, 0.9))
    assert (r.top_drop, r.control_drop) == pytest.approx((0.75, 0.25))
    assert (r["diff"], r.diff_low, r.diff_high) == pytest.approx((-0.5, -0.5, -0.5))
    assert r.p_value == 2.0 ** (1 - r.n_examples) and r.collapses == "yes"
    # knowledge_recall: drops 0.5 and 0.25, ratio 2.0 < 3: TopK is lower on every example and
    # every draw alike, so the exact test's Holm p decides: a collapse; the 3x reading says no
    assert v.loc[("knowledge_recall", "k = 32")].collapses == "yes"
    # inference: TopK 0.8 above RandomK 0.75: never a collapse
    assert v.loc[("inference", "k = 32")].collapses == "no"
    assert v.loc[("retrieval", "elbow")].k == 16
    table = ct.verdict_table(v.reset_index()).set_index(["task", "protocol", "k"])
    row = table.loc[("retrieval", "causal", "32")]
    assert row["drop ratio"] == "3.0x (3x: yes)" and row["p"] == "< 0.001"
    assert table.loc[("knowledge_recall", "causal", "32"), "drop ratio"] == "2.0x (3x: no)"
    assert row["n"] == f"{r.n_examples} ex, 5 draws" and row["detectable (80% power)"] != ""
    m = int(v.p_value.notna().sum())  # Holm over the table's cells: the smallest p times m
    assert v.p_value.min() == r.p_value and row["p (Holm)"] == stats.format_p(m * r.p_value)
    assert row["TopK - RandomK [95% CI]"] == "-0.50 [-0.50, -0.50]"
    assert table.loc[("retrieval", "causal", "16 (elbow)"), "TopK collapses the task?"] == "yes"
    rates = table["rule's error rates"]  # every verdict row names its rule's error rates
    assert rates.str.startswith("FPR ").all() or (rates == "not calibrated").all()


def test_one_random_draw_cannot_decide(runs):
    v = ct.verdict_frame(cp.load(runs / "seed"), "seed")
    r = v[(v.task == "retrieval") & (v.point == "k = 32")].iloc[0]
    assert r.n_draws == 1 and r.collapses == "undecided (1 random draw; 5 needed)"


def test_findings_follow_the_numbers(tmp_path):
    def text(tops):
        d = tmp_path / str(len(list(tmp_path.iterdir())))
        make_run(d / "causal", tops)
        v = ct.verdict_frame(cp.load(d / "causal"), "causal")
        return " ".join(findings(v, names={"causal": "the causal protocol"}))

    before = text(TOPS)
    after = text({**TOPS, "inference": 0.1})  # TopK 0.1 below RandomK 0.75: collapses
    assert "in 3 of 4 tasks at k = 32 (retrieval, knowledge_recall, math_calculation)" in before
    assert (
        "in 4 of 4 tasks at k = 32 (retrieval, knowledge_recall, math_calculation, inference)"
        in after
    )
    # drop ratios over the tasks: 3.0, 2.0, 3.0 and 0.2 / 0.25 = 0.8 before, 0.9 / 0.25 = 3.6 after
    assert "drop ratios 0.8x to 3.0x" in before and "drop ratios 2.0x to 3.6x" in after


def test_choices_and_agreement_tables(runs):
    loaded = cp.load_runs(runs)
    verdicts = {n: ct.verdict_frame(r, n) for n, r in loaded.items()}
    c = ct.choices_frame(verdicts, cp.CHANGED).set_index("run")
    # TopK means over the four tasks: (0.25 + 0.5 + 0.25 + 0.8) / 4 = 0.45; RandomK 0.75
    assert c.loc["causal", "TopK @32"] == pytest.approx(0.45)
    assert c.loc["causal", "TopK - RandomK @32"] == pytest.approx(0.45 - 0.75)
    assert c.loc["causal", "collapsed @32"] == "3 of 4"
    a = ct.agreement(loaded["seed"]["ranking"], loaded["causal"]["ranking"], [8])
    assert list(a.Spearman) == pytest.approx([1.0] * 4) and list(a["top-8 overlap"]) == [1.0] * 4


def test_agreement_by_hand():
    labels = ["L0H0", "L0H1", "L1H0", "L1H1"]
    probe = pd.DataFrame({"task": "t", "label": labels, "rank": [1, 2, 3, 4]})
    causal = pd.DataFrame({"task": "t", "label": labels, "rank": [2, 1, 4, 3]})
    row = ct.agreement(probe, causal, [1, 2]).iloc[0]
    # Spearman of (1,2,3,4) vs (2,1,4,3): 1 - 6 * sum(d^2) / (n (n^2 - 1)) = 1 - 6*4/60 = 0.6
    assert row["Spearman"] == pytest.approx(0.6)
    assert row["top-1 overlap"] == 0.0 and row["top-2 overlap"] == 1.0


def test_figure_panels_and_line_styles(runs):
    fig = cp.figure(cp.load_runs(runs))
    styles = {(t.name, t.xaxis): (t.line.dash, t.line.color) for t in fig.data if t.name}
    # the study's protocol: panels x (retrieval), x2, x6, x7; the causal one: x4, x5, x9, x10
    assert styles[("TopK Accuracy", "x")] == ("solid", "#1f77b4")
    assert styles[("RandomK COMET", "x")] == ("dash", "#d62728")
    assert styles[("LowK Accuracy", "x10")] == ("dot", "#1f77b4")
    axes = {t.xaxis for t in fig.data}
    assert axes == {"x", "x2", "x6", "x7", "x4", "x5", "x9", "x10"}
    top = next(t for t in fig.data if t.name == "TopK Accuracy" and t.xaxis == "x4")
    assert list(top.x) == [16, 32] and list(top.y) == pytest.approx([0.25, 0.25])
    legend = [t.name for t in fig.data if t.showlegend]
    assert len(legend) == len(set(legend)) == 8  # 2 metrics x (unmasked + 3 selections)


def test_pages_keep_the_hand_written_text(runs, tmp_path):
    page = tmp_path / "compare.md"
    page.write_text(
        "# Hand title\n\nintro\n\n" + cp.BEGIN + "\nstale block\n" + cp.END + "\n\nnotes\n"
    )
    html = runs / "index.html"
    cp.write_pages(runs, page, html, None)
    text = page.read_text()
    assert text.startswith("# Hand title\n\nintro\n\n" + cp.BEGIN) and text.endswith(
        cp.END + "\n\nnotes\n"
    )
    assert "stale block" not in text and "## Does TopK collapse the task against RandomK?" in text
    assert "`positions_all`: the mask at every position (positions = all); not run yet" in text
    doc = html.read_text()
    assert doc.index("fig-protocols") < doc.index("Does TopK collapse")
    assert (runs / "plotly.min.js").exists()


def test_each_panel_ticks_its_own_k(runs):
    fig = cp.figure(cp.load_runs(runs))
    assert list(fig.layout.xaxis.tickvals) == [8, 32]  # seed: elbow 8 and 32
    assert list(fig.layout.xaxis4.tickvals) == [16, 32]  # causal: elbow 16 and 32


def test_findings_say_when_the_random_control_collapses_too(tmp_path):
    def text(randomk):
        d = tmp_path / str(randomk)
        make_run(d / "seed", {t: 0.0 for t in TASKS}, randomk=randomk)
        v = ct.verdict_frame(cp.load(d / "seed"), "seed")
        return " ".join(findings(v, names={"seed": "the study's protocol"}))

    floor = text(0.125)
    assert "masking 32 random heads already takes the score from 1.00 to 0.12" in floor
    assert "in 4 of 4 tasks): the control collapses as TopK does" in floor
    assert "the control collapses" not in text(0.75)  # a control that holds: no such sentence


def test_the_holm_p_decides_and_the_interval_never_contradicts_it():
    """A cell's interval holds 0 exactly when its p is 0.05 or more; a raw p under 0.05 whose
    Holm adjustment is not is no collapse; a reason makes a cell undecided, never no."""
    import numpy as np

    from interp_heads.studies.compare.tables import collapses
    from interp_heads.sweep.stats import paired_difference

    # TopK 0 on 4 examples where the control answers 1: the exact p over 4 examples cannot go
    # below 0.125, so the interval holds 0 (the bootstrap's did not)
    few = paired_difference(np.zeros(4), np.ones((5, 4)))
    assert few["p_value"] >= 0.05 and few["diff_low"] <= 0 <= few["diff_high"]
    assert collapses(few["diff"], few["p_value"], 48, 5) == "no"
    many = paired_difference(np.zeros(12), np.ones((5, 12)))
    assert many["p_value"] < 0.05 and many["diff_high"] < 0
    assert collapses(many["diff"], many["p_value"], 48, 5) == "yes"
    assert collapses(-0.5, 0.06, 48, 5) == "no"  # raw p 0.01 in a family of 6: Holm 0.06
    why = "the metric cannot score plain answers"
    assert collapses(-0.5, 0.001, 48, 5, undecided=why) == f"undecided: {why}"
    assert collapses(-0.5, 0.001, 7, 5) == "undecided (n = 7; 10 needed)"


def test_the_page_leads_with_figure_verdict_and_findings(runs, tmp_path):
    page = tmp_path / "compare.md"
    cp.write_pages(runs, page, runs / "index.html", None)
    text = page.read_text()
    order = ["Does TopK collapse", "## Findings", "Does the probe's ranking", "What each of"]
    where = [text.index(title) for title in order]
    assert where == sorted(where)  # the answer first, then what it rests on
