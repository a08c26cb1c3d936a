"""CogQA files (the Cognitive Mirrors study's data format): one task per cognitive skill."""

from __future__ import annotations

import json

import pytest

from interp_heads.errors import PipelineError
from interp_heads.pipeline.loading import load_any_task, load_any_tasks
from interp_heads.tasks import cognitive_mirrors as cm
from interp_heads.tasks.cogqa import is_cogqa, read_cogqa
from tests.helpers import DATA, cli

SMALL = DATA / "cogqa_small.json"  # invented items, not the study's data


def test_reads_numeric_answers_and_skills_outside_the_four_panels():
    tasks = {t.name: t for t in load_any_tasks(str(SMALL))}
    counts = {name: len(t) for name, t in tasks.items()}
    assert counts == {  # the study's skill order, then the others as they appear
        "cogqa/Retrieval": 6,
        "cogqa/Knowledge Recall": 1,
        "cogqa/Semantic Understanding": 1,
        "cogqa/Syntactic Understanding": 1,
        "cogqa/Math Calculation": 3,
        "cogqa/Inference": 1,
        "cogqa/Logical Reasoning": 1,
        "cogqa/Decision-making": 1,
        "cogqa/Spatial Reasoning": 1,
    }
    math = tasks["cogqa/Math Calculation"]
    assert [(e.id, e.answer) for e in math] == [("0-2", "48"), ("0-4", "18"), ("1-1", "5.0")]
    assert tasks["cogqa/Retrieval"][0].answer == "4"  # a number in the file, text here
    assert all(
        t.fmt == "cognitive_mirrors" and t.meta["fmt_source"] == "file" for t in tasks.values()
    )
    assert len({t.sha256 for t in tasks.values()}) == 1


def test_prompts_carry_the_earlier_retrieval_answers():
    raw = json.loads(SMALL.read_text())
    math = {e.id: e for e in read_cogqa(f"{SMALL}:Math Calculation")[0]}
    item = raw[0]
    # before "How many rolls are left after the sale?": Retrieval 1, 2, 4 (3 is Math Calculation)
    want = cm.study_prompt(
        item["question"],
        "Q1: How many trays does the baker fill?\nA1: 4\n"
        "Q2: How many rolls are on each tray?\nA2: 12\n"
        "Q4: How many rolls does the baker sell?\nA4: 30",
        "How many rolls are left after the sale?",
    )
    assert (
        math["0-4"].prompt == want and math["0-4"].question == item["generated"][4]["subquestion"]
    )
    first = read_cogqa(f"{SMALL}:Syntactic Understanding")[0][0]
    assert "<prior_knowledge>\nNo prior knowledge.\n</prior_knowledge>" in first.prompt
    later = read_cogqa(f"{SMALL}:Inference")[0][0]  # no Retrieval before it: empty
    assert "<prior_knowledge>\n\n</prior_knowledge>" in later.prompt


def test_plain_form_asks_the_same_sub_questions_as_completion_prompts():
    study = {t.name: t for t in load_any_tasks(str(SMALL))}
    plain = {t.name: t for t in load_any_tasks(f"{SMALL}@plain")}
    assert list(plain) == list(study)  # same task names, so cells of both forms line up
    for name, task in plain.items():
        assert [(e.id, e.answer) for e in task] == [(e.id, e.answer) for e in study[name]]
        assert task.fmt == "plain" and task.meta["fmt_source"] == "file"
        assert task.source == f"{SMALL}@plain" and task.sha256 == study[name].sha256
    math = {e.id: e for e in plain["cogqa/Math Calculation"]}
    assert math["0-4"].prompt == (  # written out by hand from the file's first item
        "A baker fills 4 trays with 12 rolls each and sells 30 rolls. How many rolls are left?\n"
        "Q1: How many trays does the baker fill?\nA1: 4\n"
        "Q2: How many rolls are on each tray?\nA2: 12\n"
        "Q4: How many rolls does the baker sell?\nA4: 30\n"
        "Q: How many rolls are left after the sale?\nA:"
    )
    first = plain["cogqa/Syntactic Understanding"][0]  # an item's first: no prior knowledge
    assert first.prompt.endswith("slept\", which word is the subject, and is the fox awake?\n"
                                 "Q: Which word is the subject of the sentence?\nA:")  # fmt: skip
    (one,) = load_any_tasks(f"{SMALL}:Math Calculation@plain")
    assert [e.prompt for e in one] == [e.prompt for e in plain["cogqa/Math Calculation"]]
    assert load_any_task(f"{SMALL}:Inference@plain").fmt == "plain"


def test_tasks_show_lists_skills_with_counts(capsys):
    assert cli("tasks", "show", SMALL) == 0
    out = capsys.readouterr().out
    assert "4 questions, 16 sub-questions, 9 cognitive skills" in out
    assert "Retrieval" in out and " 6 " in out and "Spatial Reasoning" in out
    assert cli("tasks", "show", f"{SMALL}:Math Calculation", "-n", 1) == 0
    assert "cogqa/Math Calculation: 3 examples" in capsys.readouterr().out


def test_one_task_commands_need_one_skill():
    assert load_any_task(f"{SMALL}:Decision-making").name == "cogqa/Decision-making"
    with pytest.raises(PipelineError, match="9 cognitive skills; name one as FILE.json:<skill>"):
        load_any_task(str(SMALL))
    with pytest.raises(PipelineError, match="no sub-question has the skill 'Nope'"):
        load_any_tasks(f"{SMALL}:Nope")
    assert is_cogqa(f"{SMALL}:Retrieval") and not is_cogqa("retrieval")


@pytest.mark.parametrize(
    "content, reason",
    [
        ("{}", "non-empty JSON list"),
        ("[1, 2", "invalid JSON"),
        ('[{"question": "q"}]', "'generated' must be a non-empty list"),
        (
            '[{"question": "q", "generated": [{"subquestion": "s", "answer": true, '
            '"cognitive_skill": "Retrieval"}]}]',
            "string or a number",
        ),  # fmt: skip
        (
            '[{"question": "q", "generated": [{"subquestion": "s", "answer": "?", '
            '"cognitive_skill": "Retrieval"}]}]',
            "no letter or digit",
        ),  # fmt: skip
        (
            '[{"question": "q", "generated": [{"subquestion": "s", "answer": "a"}]}]',
            "'cognitive_skill' must be a non-empty string",
        ),  # fmt: skip
    ],
)
def test_bad_files_one_line(tmp_path, capsys, content, reason):
    path = tmp_path / "bad.json"
    path.write_text(content)
    before = path.read_bytes()
    with pytest.raises(PipelineError, match=reason):
        load_any_tasks(str(path))
    assert cli("tasks", "show", path) == 2
    err = capsys.readouterr().err.strip()
    assert reason in err and "\n" not in err and path.read_bytes() == before


@pytest.mark.parametrize("suffix", ["", ":Retrieval", ":Retrieval@plain", "@plain"])
def test_a_relative_cogqa_spec_resolves_where_its_file_is(tmp_path, monkeypatch, suffix):
    from interp_heads.config.run_config import RunConfig

    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "run.toml").write_text('model = "tiny"\n')
    (tmp_path / "here.json").write_bytes(SMALL.read_bytes())  # beside the working directory
    (tmp_path / "cfg" / "there.json").write_bytes(SMALL.read_bytes())  # beside the config
    monkeypatch.chdir(tmp_path)
    config = RunConfig.from_toml(tmp_path / "cfg" / "run.toml")
    assert config.task_path(f"here.json{suffix}") == f"here.json{suffix}"
    assert config.task_path(f"there.json{suffix}") == str(tmp_path / "cfg" / f"there.json{suffix}")
    assert load_any_tasks(config.task_path(f"here.json{suffix}"))[0].name == "cogqa/Retrieval"
