"""The head explorer's fragment: every head's card from the ranking's provenance, the data
escaped inside its script, the interval it shows computed as scipy computes a t interval."""

from __future__ import annotations

import json
import re

import pandas as pd
import torch
from scipy import stats

from interp_heads.attribution import HeadScores
from interp_heads.attribution.stability import interval_record
from interp_heads.figures.explorer import explorer_html, head_cards


def test_interval_is_scipys_t_interval_of_the_mean():
    gen = torch.Generator().manual_seed(1)
    per = torch.randn(7, 2, 3, generator=gen)
    rec = interval_record(per)
    x = per[:, 1, 2].double().numpy()
    lo, hi = stats.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=stats.sem(x))
    assert abs(rec["low"][1][2] - lo) < 1e-5 and abs(rec["high"][1][2] - hi) < 1e-5
    assert "skipped" in interval_record(per[:1])


def _scores() -> HeadScores:
    s = torch.tensor([[0.5, -2.0], [1.0, 0.1]])
    prov = {
        "interval": {"n_examples": 8, "low": [[0.1, -3.0], [0.2, -0.4]],
                     "high": [[0.9, -1.0], [1.8, 0.6]]},
        "split_half": {"n_half": [4, 4], "scores": [[[0.4, -1.0], [2.0, 0.1]],
                                                     [[0.6, -3.0], [0.1, 0.2]]]},
        "verification": {"top": [{"head": "L0H1", "exact": 0.31}],
                         "sample": [{"head": "L1H1", "exact": 0.02}]},
    }  # fmt: skip
    return HeadScores(s, "atp", "<b>task</b>", "", prov)


def test_each_card_reads_the_stored_numbers():
    known = pd.DataFrame({"kind": ["induction", "previous_token"], "layer": [0, 0],
                          "head": [1, 1], "score": [0.7, 0.05], "is_kind": [True, False]})  # fmt: skip
    cards = {k: dict(v) for k, v in head_cards(_scores(), known, "stable: x").items()}
    top = cards["L0H1"]  # |-2.0| is the largest: rank 1 by abs
    assert top["rank"] == "1 of 4 by atp (abs)"
    assert top["score (atp)"] == "-2, 95% CI [-3, -1] over 8 examples"
    # halves: |-1.0| ranks 2nd of (0.4, 1.0, 2.0, 0.1); |-3.0| ranks 1st of (0.6, 3.0, 0.1, 0.2)
    assert top["rank in each split half"].startswith("2 and 1 ")
    assert top["exact single-head ablation"].startswith("drop of log p(answer) 0.3100")
    assert "rank 1 of the 2 heads measured" in top["exact single-head ablation"]
    assert top["known kinds"] == "induction 0.7 (reaches its threshold), previous-token 0.05"
    assert cards["L0H0"]["exact single-head ablation"] == "not measured for this head"
    assert cards["L1H0"]["known kinds"] == "no known-kind scores stored"


def test_fragment_escapes_everything_read_from_the_run():
    evil = "</script><script>alert(1)</script>"
    attention = {
        "prompts": [{"tokens": [evil, "b"], "patterns": {"L0H0": [[1.0, 0.0], [0.5, 0.5]]}}]
    }
    known = pd.DataFrame({"kind": [evil], "layer": [0], "head": [0], "score": [0.1],
                          "is_kind": [False]})  # fmt: skip
    html = explorer_html(_scores(), known, attention, stability=evil)
    assert "alert(1)</script>" not in html and "<b>task</b>" not in html
    data = re.search(r'class="ihx-data">(.*?)</script>', html, re.S).group(1)
    assert "<" not in data and ">" not in data
    parsed = json.loads(data)  # the browser's JSON.parse reads the same
    assert parsed["attention"][0]["tokens"][0] == evil
    assert dict(parsed["heads"]["L0H0"]["lines"])["stability of the task's ranking"] == evil


def test_scores_explore_shows_the_same_view_in_a_notebook(tmp_path):
    scores = _scores()
    scores.provenance["stability"] = {"jaccard": {"8": 0.6}, "shared": {"8": 6}}
    view = scores.explore()
    html = view._repr_html_()
    assert 'class="ihx"' in html and "ihxShow(" in html and "plotly" not in html.lower()
    data = json.loads(re.search(r'class="ihx-data">(.*?)</script>', html, re.S).group(1))
    stab = dict(data["heads"]["L1H0"]["lines"])["stability of the task's ranking"]
    assert stab == "the halves share 6 of their top 8 (Jaccard 0.6)"
    view.save(tmp_path / "x.html")
    assert (tmp_path / "x.html").read_text().startswith("<!DOCTYPE html>")
