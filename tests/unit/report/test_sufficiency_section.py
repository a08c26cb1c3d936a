"""The sufficiency section's words: a minimal k of every head is said as what was tried, the
minimal-set table names heads only for a set found, CPR and CMD are explained in one line each."""

from __future__ import annotations

import pandas as pd

from interp_heads.report.sufficiency_section import (
    CMD_LINE,
    CPR_LINE,
    minimal_cell,
    plain_verdicts,
    summary_table,
)
from interp_heads.studies.sufficiency import minimal_table


def _summary(found: bool) -> pd.DataFrame:
    k = 14.0 if found else 270.0
    heads = "L1H2,L3H4" if found else ""
    rows = [
        dict(task="t", metric="accuracy", curve="ranking", measure="minimal_k", value=k,
             low=k, high=270.0, heads=heads, found=found, tested=243, n_examples=12),
        dict(task="t", metric="accuracy", curve="random", measure="minimal_k", value=270.0,
             low=270.0, high=270.0, heads="", found=False, tested=243, n_examples=12),
        dict(task="t", metric="answer_logprob", curve="ranking", measure="cpr", value=0.75,
             low=0.7, high=0.8),
        dict(task="t", metric="answer_logprob", curve="random", measure="cpr", value=0.3,
             low=0.2, high=0.4),
        dict(task="t", metric="answer_logprob", curve="ranking", measure="cmd", value=0.25,
             low=0.2, high=0.3),
    ]  # fmt: skip
    return pd.DataFrame(rows)


def _curves() -> pd.DataFrame:
    return pd.DataFrame([dict(task="t", metric="accuracy", curve="ranking", k=0, full=1.0,
                              empty=0.0)])  # fmt: skip


def test_a_minimal_k_of_every_head_is_said_as_what_was_tried():
    rows = _summary(False).to_dict("records")
    assert (
        minimal_cell(rows[0])
        == "no prefix of this ranking up to 243 heads reaches 90% (12 examples)"
    )
    assert minimal_cell(rows[1]) == "no random kept set up to 243 heads reaches 90% (12 examples)"
    assert minimal_cell(_summary(True).to_dict("records")[0]) == "14 [14, 270]"
    table = summary_table(_summary(False))
    assert "270" not in table.loc[table.measure.str.startswith("minimal"), "ranking"].iloc[0]


def test_minimal_table_names_heads_only_for_a_set_found(tmp_path):
    for found in (True, False):
        path = tmp_path / f"{found}.csv"
        _summary(found).to_csv(path, index=False)  # as the page reads it: "" comes back NaN
        row = minimal_table(pd.read_csv(path), _curves())[0]
        assert row["its heads, most important first"] == ("L1H2, L3H4" if found else "")
        assert (
            "no prefix of this ranking up to 243" in row["minimal k, ranking [95% CI]"]
        ) != found


def test_plain_verdicts_say_the_minimal_set_and_cpr_beside_random():
    (sentence,) = plain_verdicts(_summary(False))
    assert sentence.startswith("t: no prefix of this ranking up to 243 heads reaches 90%")
    assert "CPR 0.75 (random kept sets 0.30) and CMD 0.25" in sentence
    (found,) = plain_verdicts(_summary(True))
    assert "top 14 heads kept alone reach 90%" in found
    assert CPR_LINE.startswith("CPR (higher is better)") and "\n" not in CPR_LINE + CMD_LINE


def test_minimal_table_points_to_the_searched_set_when_no_kept_set_reaches_the_target():
    """No grid set below every head reached 90%: no heads named, the row says so and points to
    the searched sets' page, or to the run's own searched set with its held-out status; each
    row names the ranking whose prefixes were kept."""
    row = minimal_table(_summary(False), _curves(), "gradxact")[0]
    assert row["ranking"] == "`gradxact`" and row["its heads, most important first"] == ""
    assert "270" not in row["minimal k, ranking [95% CI]"]
    assert row["searched set"].startswith("no kept set on the grid reaches the target: see the "
                                          "searched set ([sufficient_sets.md]")  # fmt: skip
    found = minimal_table(_summary(True), _curves(), "gradxact")[0]
    assert found["searched set"] == "" and found["its heads, most important first"] == "L1H2, L3H4"
    searched = pd.DataFrame([{"task": "t", "set": "found", "k": 5, "n_total": 270,
                              "status": "not verified"}])  # fmt: skip
    own = minimal_table(_summary(False), _curves(), "gradxact", searched)[0]
    assert own["searched set"] == "5 of 270 heads (not verified held out; this run's search)"


def test_the_run_pages_searched_table_shows_status_minimality_sizes_and_ranking():
    from interp_heads.report.sufficiency_section import searched_table

    frame = pd.DataFrame([
        {"task": "t", "set": "found", "k": 3, "n_total": 12, "metric": "answer_logprob",
         "f": 0.95, "f_low": 0.9, "f_high": 1.0, "mean": -1.0, "heads": "L0H1,L1H2,L2H0",
         "status": "found", "one_minimal": True, "sizes_resampled": "3,2,3", "ranking": "atp"},
        {"task": "t", "set": "ranking prefix", "k": 3, "n_total": 12, "metric": "answer_logprob",
         "f": 0.5, "f_low": 0.4, "f_high": 0.6, "mean": -2.0, "heads": "L0H1,L1H2,L2H0",
         "status": "found", "one_minimal": True, "sizes_resampled": "3,2,3", "ranking": "atp"},
    ])  # fmt: skip
    t = searched_table(frame)
    assert t.loc[0, "status (held out)"] == "found" and t.loc[0, "1-minimal"] == "yes"
    assert t.loc[0, "sizes on resampled examples"] == (
        "min 2 / median 3 / max 3 over 3 resamples (2: 1, 3: 2)"
    )
    assert t.loc[1, "ranking"] == "atp" and t.loc[1, "status (held out)"] == ""
    old = searched_table(frame.drop(columns=["status", "one_minimal", "sizes_resampled"]))
    assert old.loc[0, "status (held out)"] == "not checked" and old.loc[0, "1-minimal"] == "no"
    assert old.loc[0, "sizes on resampled examples"] == "not resampled"


def test_the_section_names_its_run_folder_relative_to_where_it_is_made(tmp_path, monkeypatch):
    from interp_heads.studies.sufficiency import render

    run = {
        "sufficiency": _summary(True),
        "sufficiency_curves": pd.DataFrame(
            [
                dict(
                    task="t",
                    metric="accuracy",
                    curve=c,
                    k=2,
                    f=0.5,
                    f_low=0.4,
                    f_high=0.6,
                    full=1.0,
                    empty=0.0,
                    run_k=True,
                    n_examples=12,
                )
                for c in ("ranking", "random", "necessity")
            ]
        ),  # fmt: skip
        "manifest": {"config": {"attribution": "atp", "ablation": "mean"}},
    }
    folder = tmp_path / "runs" / "sufficiency"
    (tmp_path / "docs").mkdir()
    monkeypatch.chdir(tmp_path)  # made from the checkout: the page does not carry its path
    assert "-> `runs/sufficiency`," in render(folder, run, None)
    monkeypatch.chdir(tmp_path / "docs")  # made from elsewhere: the folder as given
    assert f"-> `{folder.as_posix()}`," in render(folder, run, None)
