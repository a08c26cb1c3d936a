"""Bad flags and paths are refused in one line that says what is accepted, before the model loads."""

from __future__ import annotations

import json

import pytest

from tests.helpers import DATA, cli

TASK = str(DATA / "tiny_echo.jsonl")


@pytest.fixture
def no_model_load(monkeypatch):
    """The model loader replaced: a refusal must come before it."""
    import interp_heads.pipeline.experiment as experiment

    def load(*_, **__):
        raise AssertionError("the model was loaded first")

    monkeypatch.setattr(experiment, "load_any_model", load)


def test_a_task_path_typo_fails_before_the_model_loads(no_model_load, tmp_path, capsys):
    assert cli("attribute", "--model", "tiny", "--task", tmp_path / "nosuch.jsonl",
               "--out", tmp_path / "a") == 2  # fmt: skip
    err = capsys.readouterr().err
    assert "no such file" in err and "model was loaded" not in err


def test_a_ranking_in_an_ablate_folder_says_what_is_expected(no_model_load, tmp_path, capsys):
    abl = tmp_path / "abl"
    abl.mkdir()
    (abl / "manifest.json").write_text(json.dumps({"command": "ablate"}))
    code = cli("ablate", "--model", "tiny", "--task", TASK, "--ranking", abl,
               "--out", tmp_path / "b")  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "is an ablate run folder without ranking.csv" in err
    assert "--ranking expects the folder 'interp-heads attribute --out DIR'" in err


@pytest.mark.parametrize(
    "argv, said",
    [
        (["attribute", "--method", "atpp"], "argument --method: unknown attribution method 'atpp'; use one of exact, atp"),
        (["ablate", "--heads", "L0H1", "--metrics", "accuracy,acuracy"], "argument --metrics: unknown metric 'acuracy'; use one of accuracy, comet"),
        (["ablate", "--heads", "L0H1", "--selections", "topk,randk"], "argument --selections: unknown selection 'randk'; use one of"),
    ],
)  # fmt: skip
def test_an_unknown_name_lists_the_choices(argv, said, tmp_path, capsys):
    code = cli(*argv[:1], "--model", "tiny", "--task", TASK, *argv[1:], "--out", tmp_path / "c")
    assert code == 2 and said in capsys.readouterr().err


def test_no_filter_help_shows_no_default(capsys):
    assert cli("attribute", "--help") == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "answered correctly or not" in help_text and "not (default: True)" not in help_text
