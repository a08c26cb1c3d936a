"""The claim study on the tiny model: a user's task and ranking, one run per intervention and
scope, the metric cells read from the run at every position, parameters checked."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

from interp_heads.errors import PipelineError
from interp_heads.pipeline.experiment import RunConfig, attribute_steps, run_experiment
from interp_heads.studies import get_study, run_study, study_config
from tests.helpers import DATA, cli

ECHO = str(DATA / "tiny_echo.jsonl")


@pytest.fixture(scope="module")
def ranking(tmp_path_factory):
    out = tmp_path_factory.mktemp("rank") / "attr"
    config = RunConfig.from_dict({"model": "tiny", "tasks": [ECHO], "n_rank": 4, "n_eval": 8,
                                  "attribution": "atp", "filter_correct": False, "verify": 0})  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_experiment(config, out, quiet=True, steps=attribute_steps())
    return out


PARAMS = {"model": "tiny", "k": "2", "max_new_tokens": "3", "filter_correct": "false"}


def test_one_run_per_intervention_and_scope_the_logit_metrics_only_at_every_position(ranking):
    study = get_study("claim", task=ECHO, ranking=str(ranking), **PARAMS)
    runs = study.runs("small")
    assert len(runs) == 1 + 3 + 2  # the default, three other kinds, two other scopes
    for run in runs:
        config = study_config(run)
        assert str(config.ranking) == str(ranking) and config.ks == [2]
        logit = {"answer_logprob"} & set(map(str, config.metrics))
        assert bool(logit) == (str(config.positions) == "all")
    # tiny_echo has no distractors: no logit difference
    assert "logit_diff" not in study.options()["metric"]


def test_the_claim_page_says_which_choices_it_survives(ranking, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pages = run_study("claim", tmp_path / "runs", size="small", docs=tmp_path / "docs",
                          quiet=True, params={"task": ECHO, "ranking": str(ranking), **PARAMS})  # fmt: skip
    text = pages[0].read_text()
    assert pages[0].name == "claim.md" and "Which choices the claim survives" in text
    assert "the default protocol" in text
    rows = [line for line in text.splitlines() if line.startswith("| default end")]
    assert len(rows) == 1 + 3 + 2 + 1  # every cell: the end and each flip
    logprob = next(line for line in rows if "metric = answer_logprob" in line)
    recs = pd.read_parquet(tmp_path / "runs" / "claim" / "mean_all" / "sweep.parquet")
    mine = recs[(recs.metric == "answer_logprob") & (recs.k == 2)]
    effect = (
        mine[mine.selection == "TopK"].value.mean() - mine[mine.selection == "RandomK"].value.mean()
    )
    assert f"{effect:+.2f} [" in logprob


def test_a_missing_or_unknown_parameter_is_one_line_and_exit_2(capsys, ranking):
    assert cli("study", "claim", "--param", f"ranking={ranking}") == 2
    assert "needs --param task=VALUE" in capsys.readouterr().err
    assert cli("study", "claim", "--param", "tsak=x.jsonl") == 2
    assert "unknown parameter(s) tsak" in capsys.readouterr().err
    with pytest.raises(PipelineError, match="KEY=VALUE"):
        from interp_heads.cli.study import cmd_study

        class A:
            list, name, param = False, "claim", ["novalue"]

        cmd_study(A())
