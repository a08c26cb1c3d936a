"""The searched-sufficient-sets study on the tiny model: one run per ablation, each searching its
own rank examples, and a page whose rows are the runs' own sufficient_sets.csv."""

from __future__ import annotations

import re
import warnings

import pandas as pd

from interp_heads.studies import run_study, study_config
from interp_heads.studies.sufficient_sets import SufficientSets, answer
from tests.helpers import DATA

SMALL = {"sufficiency": True, "sufficiency_search": True, "sufficiency_seeds": 1,
         "sufficiency_grid": "ks",
         "sufficiency_metrics": ["accuracy", "answer_logprob"], "ks": [2], "seeds": 1,
         "selections": ["topk", "randomk"], "metrics": ["accuracy"], "n_rank": 4, "n_eval": 6,
         "attribution": "gradxact"}  # fmt: skip


class TinySets(SufficientSets):
    name = "tiny_sufficient_sets"
    base = str(DATA / "tiny.toml")
    sizes = {"small": SMALL, "full": SMALL}
    rankings = {}


def test_each_ablation_is_one_run_searching_its_own_rank_examples():
    runs = SufficientSets().runs("full")
    assert [study_config(r).search_ablation for r in runs] == list(SufficientSets.ablations)
    assert [study_config(r).ablation for r in runs] == ["mean", "position_mean", "resample", "mean"]
    assert all(study_config(r).ranking is None for r in runs)
    atp, grad = "ablation_atp", "gradxact"
    assert [study_config(r).attribution for r in runs] == [atp, grad, atp, atp]


def test_the_page_lists_every_runs_sets_under_its_answer(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_study(TinySets(), tmp_path / "runs", docs=tmp_path / "docs", quiet=True)
    text = (tmp_path / "docs" / "sufficient_sets.md").read_text()
    assert text.index("## The answer") < text.index("## Each task's set")
    want, tables = 0, []
    for ablation in SufficientSets.ablations:
        csv = tmp_path / "runs" / "sufficient_sets" / ablation / "heads" / "sufficient_sets.csv"
        if csv.exists():
            want += len(pd.read_csv(csv))
            tables.append(pd.read_csv(csv))
    summary, rest = text.split("### Each set per metric")
    sets, prefixes = rest.split("## The ranking's TopK under each ablation")
    # one summary row per searched set: its size, 1-minimal, the sizes on resamples, its status
    for t in tables:
        for r in t[t.set == "found"].drop_duplicates("task").itertuples():
            line = next(ln for ln in summary.splitlines()
                        if ln.startswith(f"| {r.ablation} | {r.task} | "))  # fmt: skip
            assert (
                f"| `{r.ranking}` | {r.k} of {r.n_total} | patience 8, 1-minimality pass | yes |"
                in line
            )
            assert "| not resampled |" in line and r.status in line
    rows = [line for line in sets.splitlines()
            if line.startswith(tuple(f"| {a} |" for a in SufficientSets.ablations))]  # fmt: skip
    assert len(rows) == want
    assert "| counterfactual |" not in prefixes  # its run sweeps under mean: listed once
    for ablation in ("mean", "position_mean", "resample"):
        verdicts = pd.read_csv(tmp_path / "runs" / "sufficient_sets" / ablation / "heads" /
                               "sufficiency_verdicts.csv")  # fmt: skip
        for r in verdicts.itertuples():
            assert f"| {ablation} | {r.task} | {r.k} | {r.masked_f:.2f} | " in prefixes
    found = [line.split(" | ")[4] for line in rows if " | found | " in line]
    assert all(re.fullmatch(r"\d+ of \d+", size) for size in found), found


def test_the_answer_names_sets_of_at_most_half_the_heads_or_the_smallest():
    rows = pd.DataFrame([
        {"ablation": "mean", "task": "a", "set": "found", "metric": "answer_logprob", "k": 100,
         "n_total": 270, "f": 0.93, "f_low": 0.9, "f_high": 0.95},
        {"ablation": "mean", "task": "b", "set": "found", "metric": "answer_logprob", "k": 200,
         "n_total": 270, "f": 0.91, "f_low": 0.88, "f_high": 0.94},
        {"ablation": "position_mean", "task": "a", "set": "found", "metric": "answer_logprob",
         "k": 150, "n_total": 270, "f": 0.9, "f_low": 0.85, "f_high": 0.95},
    ])  # fmt: skip
    said = answer(rows)  # an older table: no status, no patience, no pass
    assert "a: 100 of 270 heads" in said[0] and "b:" not in said[0] and "older run" in said[0]
    assert "no set of at most half" in said[1] and "150 of 270" in said[1]
    assert "says nothing on whether one exists" in said[1]  # patience 0: no claim
    patient = rows.assign(patience=8, one_minimal=True)
    said = answer(patient)
    assert "found no set of at most half the heads for any task" in said[1]
    assert "patient search (patience 8, then 1-minimal)" in said[1]


def test_a_set_missing_the_band_held_out_is_not_verified_or_over_recovers():
    base = {"ablation": "mean", "set": "found", "k": 100, "n_total": 270, "f_low": 0.0,
            "f_high": 2.0, "patience": 8, "one_minimal": True}  # fmt: skip
    rows = pd.DataFrame([
        {**base, "task": "retrieval", "metric": "answer_logprob", "f": 1.15},
        {**base, "task": "retrieval", "metric": "kl_unmasked", "f": 0.37},
        {**base, "task": "math", "metric": "answer_logprob", "f": 0.86},
        {**base, "task": "inference", "metric": "answer_logprob", "f": 1.15},
        {**base, "task": "inference", "metric": "kl_unmasked", "f": 1.02},
        {**base, "task": "ok", "metric": "answer_logprob", "f": 0.95},
    ])  # fmt: skip
    said = answer(rows)
    assert "for ok: 100 of 270 heads" in said[0] and "retrieval" not in said[0]
    assert any("retrieval's searched set of 100 of 270 heads (at most half) is not verified" in s
               and "kl_unmasked f 0.37 < 0.90" in s for s in said)  # fmt: skip
    assert any("math's searched set" in s and "is not verified" in s for s in said)
    assert any("inference's searched set of 100 of 270 heads (at most half) over-recovers" in s
               for s in said)  # fmt: skip
