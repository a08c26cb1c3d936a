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
    want = 0
    for ablation in SufficientSets.ablations:
        csv = tmp_path / "runs" / "sufficient_sets" / ablation / "heads" / "sufficient_sets.csv"
        if csv.exists():
            want += len(pd.read_csv(csv))
    sets, prefixes = text.split("## The ranking's TopK under each ablation")
    rows = [line for line in sets.splitlines()
            if line.startswith(tuple(f"| {a} |" for a in SufficientSets.ablations))]  # fmt: skip
    assert len(rows) == want
    assert "| counterfactual |" not in prefixes  # its run sweeps under mean: listed once
    for ablation in ("mean", "position_mean", "resample"):
        verdicts = pd.read_csv(tmp_path / "runs" / "sufficient_sets" / ablation / "heads" /
                               "sufficiency_verdicts.csv")  # fmt: skip
        for r in verdicts.itertuples():
            assert f"| {ablation} | {r.task} | {r.k} | {r.masked_f:.2f} | " in prefixes
    found = [line.split(" | ")[3] for line in rows if " | found | " in line]
    assert all(re.fullmatch(r"\d+ \[\d+, \d+\] of \d+", size) for size in found), found


def test_the_answer_names_sets_of_at_most_half_the_heads_or_the_smallest():
    rows = pd.DataFrame([
        {"ablation": "mean", "task": "a", "set": "found", "metric": "answer_logprob", "k": 100,
         "n_total": 270, "f": 0.93, "f_low": 0.9, "f_high": 0.95},
        {"ablation": "mean", "task": "b", "set": "found", "metric": "answer_logprob", "k": 200,
         "n_total": 270, "f": 0.91, "f_low": 0.88, "f_high": 0.94},
        {"ablation": "position_mean", "task": "a", "set": "found", "metric": "answer_logprob",
         "k": 150, "n_total": 270, "f": 0.9, "f_low": 0.85, "f_high": 0.95},
    ])  # fmt: skip
    said = answer(rows)
    assert "a: 100 of 270 heads" in said[0] and "b:" not in said[0]
    assert "no task has a sufficient set of at most half" in said[1] and "150 of 270" in said[1]
