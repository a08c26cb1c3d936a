"""The specification-curve study on the tiny model: its cells are both ends and every protocol
one choice away, each distinct set of generating choices runs once, rankings are made once per
(method, format) and given, and every effect on the page equals a hand computation from the runs'
stored records."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

from interp_heads.errors import PipelineError
from interp_heads.studies import run_study
from interp_heads.studies.spec_curve import (
    FACTORIAL,
    SpecCurve,
    cells,
    curve_frame,
    factorial_cells,
    plan_runs,
    run_name,
)
from tests.helpers import DATA, ROOT

ECHO = str(DATA / "tiny_echo.jsonl")
OPTIONS = {
    "ranking": {"atp": {"attribution": "atp"}, "gradxact": {"attribution": "gradxact"}},
    "intervention": {"zero": {"ablation": "zero"}, "mean": {"ablation": "mean"}},
    "scope": {"last": {"positions": "last"}, "all": {"positions": "all"}},
    "format": {
        "short": {"tasks": [ECHO], "max_new_tokens": 3},
        "long": {"tasks": [ECHO], "max_new_tokens": 4},
    },  # fmt: skip
    "reference": {"chrf": {"metric": "chrf"}, "gold": {"metric": "accuracy"}},
    "examples": {"all": {"correct_only": False}, "correct": {"correct_only": True}},
    "k": {"literal": {"k": 4}, "fractions": {"k": 2}},
}
ENDS = tuple({c: list(o)[i] for c, o in OPTIONS.items()} for i in (0, 1))


class TinyCurve(SpecCurve):
    name = "tiny_spec_curve"
    base = str(DATA / "tiny.toml")
    options, ends = OPTIONS, ENDS
    common = {"filter_correct": False, "verify": 0, "elbow": False, "scaled_ks": [],
              "selections": ["topk", "randomk"], "exclude_top": False, "seeds": 2,
              "metrics": ["chrf", "accuracy"]}  # fmt: skip
    sizes = {
        s: {"tasks": 1, "n_eval": 6, "n_rank": 4, "max_examples": 12} for s in ("small", "full")
    }


def test_cells_are_both_ends_and_every_single_flip_once():
    got = cells(OPTIONS, ENDS)
    assert len(got) == 2 + 2 * len(OPTIONS)  # two options per choice: one flip per choice and end
    for cell in got:
        end = ENDS[0] if cell["end"] == "study" else ENDS[1]
        differ = [c for c in OPTIONS if cell[c] != end[c]]
        assert differ == ([cell["flipped"]] if cell["flipped"] else [])


def test_the_small_study_plans_the_ends_runs_and_reads_every_read_flip_from_them(monkeypatch):
    monkeypatch.chdir(ROOT)
    runs = plan_runs("small", "configs/cognitive_mirrors.toml")
    sweeps = {r.folder for r in runs if r.steps == "run"}
    ends = [c for c in cells() if not c["flipped"]]
    assert sweeps == {run_name(c) for c in ends}  # no run beyond the two ends'
    read = [c for c in cells() if c["flipped"] in ("reference", "examples", "k")]
    assert read and {run_name(c) for c in read} <= sweeps  # a read flip needs no run of its own
    flips = [c for c in cells() if c["flipped"] in ("ranking", "intervention", "scope", "format")]
    assert all(run_name(c) not in sweeps for c in flips)  # each generating flip is a run of its own
    assert all(r.changes["tasks"][0].endswith("knowledge_recall.jsonl") or
               r.changes["tasks"][0] == "knowledge_recall" for r in runs)  # fmt: skip


def test_the_full_study_plans_each_generating_combination_once(monkeypatch):
    monkeypatch.chdir(ROOT)
    runs = plan_runs("full", "configs/cognitive_mirrors.toml")
    sweeps = [r for r in runs if r.steps == "run"]
    ranks = [r for r in runs if r.steps == "attribute"]
    # the one-at-a-time cells' 14 runs (7 from each end) all lie in the factorial: 2 formats x (2 rankings x 2
    # interventions x 3 scopes x 2 pools)
    assert len({run_name(c) for c in cells()}) == 14
    assert len(ranks) == 4 and len(sweeps) == 2 * 2 * 2 * 3 * 2
    assert {run_name(c) for c in cells()} <= {r.folder for r in sweeps}
    assert runs[: len(ranks)] == ranks  # rankings first: the sweeps are given them
    for r in sweeps:
        assert r.changes["ranking"].startswith("{runs}/spec_curve/rank_")
        assert r.changes["ks"] == [8, 32]
        # RandomK outside TopK: "_outside"; from every head: the folder it had before
        assert r.changes["exclude_top"] is r.folder.endswith("_outside")
    assert all(r.changes["exclude_top"] is False for r in ranks)  # their configs as before
    # the runs made before the factorial keep their folders (resumed, not run again)
    assert "spec_curve/probe_scale_generated_study" in {r.folder for r in sweeps}


def test_the_factorial_is_every_combination_around_each_end():
    from itertools import product

    from interp_heads.studies.spec_curve import FACTORIAL, OPTIONS, factorial_cells

    got = factorial_cells()
    assert len(got) == 2 * 2 * 2 * 3 * 2 * 2  # x 2 ends; k is read, not run
    for end, fmt in (("study", "study"), ("causal", "plain")):
        mine = [c for c in got if c["end"] == end]
        assert {c["format"] for c in mine} == {fmt}
        assert sorted(tuple(c[x] for x in FACTORIAL) for c in mine) == sorted(
            product(*(list(OPTIONS[x]) for x in FACTORIAL))
        )


@pytest.fixture(scope="module")
def curve(tmp_path_factory):
    out = tmp_path_factory.mktemp("spec")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the random model answers nothing: low-baseline warnings
        pages = run_study(TinyCurve(), out / "runs", docs=out / "docs", quiet=True)
    return out, pages


def test_every_effect_equals_a_hand_computation_from_the_records(curve):
    out, pages = curve
    folders = {r.folder: out / "runs" / r.folder for r in TinyCurve().runs("full")}
    frame = curve_frame(folders, OPTIONS, ENDS, factorial=FACTORIAL)
    assert curve_frame(folders, OPTIONS, ENDS).design.eq("one").all()  # without: none
    # the random model answers nothing right: the cells of correctly answered examples are empty
    one = frame[frame.design == "one"]
    assert len(one) == 8 and set(frame.examples) == {"all"}
    # the factorial around the study end (all examples): 2 rankings x 2 kinds x 2 scopes x 2 ks
    assert len(frame[frame.design == "factorial"]) == 16
    every = cells(OPTIONS, ENDS) + factorial_cells(OPTIONS, ENDS)
    for r in frame.itertuples():
        cell = next(c for c in every if all(c[k] == getattr(r, k) for k in OPTIONS)
                    and c["end"] == r.end and c["flipped"] == r.flipped)  # fmt: skip
        recs = pd.read_parquet(folders[run_name(cell, OPTIONS)] / "sweep.parquet")
        mine = recs[(recs.metric == r.metric) & (recs.k == r.k_heads)]
        top = mine[mine.selection == "TopK"].value.mean()
        rnd = mine[mine.selection == "RandomK"].value.mean()
        assert r.effect == pytest.approx(top - rnd) and r.draws == 2


def test_rankings_are_made_once_and_given(curve):
    out, _ = curve
    import json

    for run in TinyCurve().runs("full"):
        manifest = json.loads((out / "runs" / run.folder / "manifest.json").read_text())
        if run.steps == "attribute":
            assert not (out / "runs" / run.folder / "sweep.parquet").exists()
        else:
            assert str(manifest["config"]["ranking"]).endswith(run.changes["ranking"][7:])


def test_the_page_leads_with_the_answer(curve):
    out, pages = curve
    text = (out / "docs" / "spec_curve.md").read_text()
    assert text.index("## The two protocols") < text.index("## The answer")
    assert text.index("## The answer") < text.index("## The full factorial")
    assert text.index("## The full factorial") < text.index("## Every cell")
    assert "the study's protocol" in text and "the causal protocol" in text
    assert text.count("\n| ") >= 10


def test_findings_name_each_flipping_choice_and_count_them():
    from interp_heads.studies.spec_curve.page import findings

    frame = pd.DataFrame(
        [{"end": e, "flipped": "", "task": t, "verdict": v}
         for e, v in (("study", "no"), ("causal", "no")) for t in ("a", "b")]
    )  # fmt: skip
    flips = pd.DataFrame([
        {"end": "causal", "choice": "scope", "change": "all -> last", "task": "a", "flips": True, "delta": -0.2},
        {"end": "causal", "choice": "k", "change": "literal -> fractions", "task": "a", "flips": True, "delta": -0.3},
        {"end": "causal", "choice": "k", "change": "literal -> fractions", "task": "b", "flips": True, "delta": -0.1},
        {"end": "study", "choice": "scope", "change": "generated -> last", "task": "b", "flips": True, "delta": 0.1},
    ])  # fmt: skip
    study, causal = findings(flips, frame)
    assert "One choice flips it: scope generated -> last on b." in study
    assert "is +0.10 (scope generated -> last, b)" in study
    assert (
        "2 choices flip it, each alone: scope all -> last on a; k literal -> fractions on a, b."
        in causal
    )


def test_flip_table_keeps_two_choices_with_the_same_change_apart():
    from interp_heads.studies.spec_curve.page import flip_table

    flips = pd.DataFrame([
        {"end": "study", "choice": "scope", "change": "a -> b", "task": "t", "flips": True, "verdict": "yes"},
        {"end": "study", "choice": "format", "change": "a -> b", "task": "t", "flips": False, "verdict": "no"},
    ])  # fmt: skip
    rows = flip_table(flips, ["t"])[2:]
    assert len(rows) == 2
    assert (
        "scope: a -> b | **yes** | 1 of 1" in rows[0] and "format: a -> b | no | 0 of 1" in rows[1]
    )


COGQA = str(DATA / "cogqa_small.json")


def test_a_cogqa_file_is_the_tasks_of_every_cell_in_both_formats(monkeypatch):
    monkeypatch.chdir(ROOT)
    study = SpecCurve(cogqa=COGQA)
    runs = study.runs("full")
    panels = [f"{COGQA}:{s}" for s in ("Retrieval", "Knowledge Recall", "Math Calculation",
                                         "Inference")]  # fmt: skip
    assert len(runs) == 52 and all(r.folder.startswith("spec_curve_cogqa/") for r in runs)
    for r in runs:
        plain = r.folder.removesuffix("_outside").endswith("_plain")
        assert r.changes["tasks"] == [p + "@plain" if plain else p for p in panels]
        assert r.changes["max_new_tokens"] == 32
        if r.steps == "run":
            assert r.changes["ranking"].startswith("{runs}/spec_curve_cogqa/rank_")
    assert [r.changes["tasks"] for r in study.runs("small")][0] == panels[
        1:3
    ]  # the two cheap tasks
    with pytest.raises(PipelineError, match="no CogQA file 'nope.json'"):
        SpecCurve(cogqa="nope.json").runs("small")


def test_a_small_cogqa_page_names_its_file_and_what_the_small_size_leaves_out(monkeypatch):
    monkeypatch.chdir(ROOT)
    both = SpecCurve(cogqa=COGQA).intro(planned=False)
    assert "the CogQA file `cogqa_small.json`'s panels" in both
    assert "here `--size small`" in both and both.endswith(").")
    assert "--size small" not in SpecCurve(cogqa=COGQA).intro(planned=True)
    assert "CogQA" not in SpecCurve().intro(planned=False)


def _row(end, flipped, task, verdict, effect, topk=0.0, n=24, **choices):
    base = {"ranking": "r", "intervention": "i", "scope": "all", "format": "plain"}
    return {**base, **choices, "end": end, "flipped": flipped, "task": task, "verdict": verdict,
            "effect": effect, "topk": topk, "n": n}  # fmt: skip


def test_an_undecided_or_too_small_cell_is_never_a_flip_nor_the_largest_change():
    from interp_heads.studies.spec_curve.page import findings, flip_rows

    ends = ({"ranking": "r", "intervention": "i", "scope": "all", "format": "plain"},)
    frame = pd.DataFrame([
        _row("causal", "", "a", "yes", -0.8),
        _row("causal", "", "b", "yes", -0.7),
        # the study's rule on plain answers: undecided, and by far the largest change (+0.8)
        _row("causal", "ranking", "a", "undecided: blind", 0.0, ranking="s"),
        _row("causal", "ranking", "b", "no", -0.5, ranking="s"),
        # one example: "too few" (and a +0.9 change)
        _row("causal", "scope", "a", "no, but too few examples to decide (n = 1; 10 needed)",
             0.1, n=1, scope="generated"),
        _row("causal", "scope", "b", "no", -0.6, scope="generated"),
    ])  # fmt: skip
    flips = flip_rows(frame, ends, names=("causal",))
    by = flips.set_index(["choice", "task"])
    assert not by.loc[("ranking", "a"), "flips"] and not by.loc[("scope", "a"), "flips"]
    assert by.loc[("ranking", "b"), "flips"] and by.loc[("scope", "b"), "flips"]
    said = "\n".join(findings(flips, frame, names=("causal",)))
    # decided changes: +0.20 (ranking, b) and +0.10 (scope, b); the +0.80 and +0.90 are not
    assert "between decided cells is +0.20 (ranking r -> s, b)" in said
    # the floor counts the decided cells only (b's two), both at TopK 0.00
    assert "TopK is 0.00 in 2 of 2 decided cells one choice from it" in said
    assert "floor effect" in said and "TopK collapses 2 of 2 tasks against RandomK." in said
    frame.loc[1, "verdict"] = "undecided (n = 7; 10 needed)"  # an end of too few examples
    said = "\n".join(findings(flip_rows(frame, ends, names=("causal",)), frame, names=("causal",)))
    assert "TopK collapses 1 of 2 tasks against RandomK (1 of them undecided)." in said
    assert "TopK is 0.00 in" not in said  # no decided pair is left: b's end is undecided
    assert "Undecided in 1 cell-task pairs: blind." in said
    assert "blind by construction" in said  # scope generated in the plain format
    assert "fewer than 10 examples (smallest n = 1)" in said
