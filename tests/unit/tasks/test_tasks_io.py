"""Task files: loading, validation errors (file, line, reason), saving, built-ins."""

from __future__ import annotations

import json

import pytest

from interp_heads.tasks import BUILTIN_TASKS, TaskFormatError, list_tasks, load_task, save_task
from interp_heads.tasks.schema import Example, Task


def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_minimal_jsonl_defaults(tmp_path):
    p = _write(tmp_path / "mine.jsonl", [json.dumps({"prompt": "2 + 2 =", "answer": "4"}), ""])
    task = load_task(p)
    assert task.name == "mine" and len(task) == 1
    ex = task[0]
    assert (ex.id, ex.task, ex.question, ex.aliases) == ("1", "mine", "2 + 2 =", ())
    assert task.sha256 and task.source.endswith("mine.jsonl")


def test_csv_with_aliases(tmp_path):
    p = tmp_path / "caps.csv"
    p.write_text('prompt,answer,aliases\n"Capital of Ukraine?",Kyiv,Kiev|Kiew\n', encoding="utf-8")
    ex = load_task(p)[0]
    assert ex.answer == "Kyiv" and ex.aliases == ("Kiev", "Kiew") and ex.id == "2"


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ('{"prompt": "x", "answer": "1"', "invalid JSON"),
        ('{"prompt": "x"}', "missing field 'answer'"),
        ('{"prompt": "x", "answer": "  "}', "empty answer"),
        ('{"prompt": "x", "answer": 4}', "must be a string"),
        ('{"prompt": "x", "answer": "4", "aliases": "a"}', None),
        ('{"prompt": "x", "answer": "4", "aliases": [1]}', "aliases"),
        ('{"prompt": "x", "answer": "4", "corrupted_prompt": "y"}', "together"),
        ("[1, 2]", "JSON object"),
    ],
)
def test_broken_line_names_file_line_reason(tmp_path, line, reason):
    good = json.dumps({"prompt": "a", "answer": "b"})
    p = _write(tmp_path / "user_task.jsonl", [good, line])
    if reason is None:
        load_task(p)
        return
    with pytest.raises(TaskFormatError) as err:
        load_task(p)
    msg = str(err.value)
    assert msg.startswith("user_task.jsonl:2: ") and reason in msg and "\n" not in msg


def test_duplicate_ids(tmp_path):
    rows = [json.dumps({"id": "a", "prompt": "p", "answer": "x"})] * 2
    with pytest.raises(TaskFormatError, match=r"t\.jsonl:2: duplicate id 'a' \(first on line 1\)"):
        load_task(_write(tmp_path / "t.jsonl", rows))


def test_non_utf8(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_bytes(b'{"prompt": "a", "answer": "b"}\n{"prompt": "caf\xe9", "answer": "b"}\n')
    with pytest.raises(TaskFormatError, match=r"bad\.jsonl:2: not valid UTF-8"):
        load_task(p)


def test_empty_and_missing(tmp_path):
    with pytest.raises(TaskFormatError, match="no examples"):
        load_task(_write(tmp_path / "empty.jsonl", []))
    with pytest.raises(TaskFormatError, match="unknown task"):
        load_task("no_such_task")
    with pytest.raises(TaskFormatError, match="no such file"):
        load_task(tmp_path / "nope.jsonl")


def test_save_roundtrip(tmp_path):
    exs = [
        Example("a", "t", "Größe von Köln?", "groß", "q", ("x",), "c", "d"),
        Example("b", "t", "p", "y"),
    ]
    path = save_task(Task("t", exs), tmp_path / "out" / "t.jsonl")
    raw = path.read_bytes()
    assert raw.endswith(b"\n") and b"\r" not in raw and "Größe".encode() in raw
    back = load_task(path)
    assert back[0] == exs[0]
    assert back[1].question == "p"  # defaults to the prompt
    save_task(back, tmp_path / "again.jsonl")
    assert (tmp_path / "again.jsonl").read_bytes() != b""


def test_builtins_listed_and_loadable():
    assert list_tasks() == list(BUILTIN_TASKS) + ["retrieval_keyed"]
    for name in list_tasks():
        task = load_task(name)
        assert task.name == name and len(task) >= 300 and task.has_corrupted
        assert task.fmt == "plain"


def test_data_dir_env(tmp_path, monkeypatch):
    monkeypatch.setenv("INTERP_HEADS_DATA", str(tmp_path))
    assert list_tasks() == []
    _write(tmp_path / "retrieval.jsonl", [json.dumps({"prompt": "a", "answer": "b"})])
    assert list_tasks() == ["retrieval"]
    assert load_task("retrieval")[0].answer == "b"


def test_distractors_meta_and_declared_format(tmp_path):
    rows = [
        json.dumps({"fmt": "plain"}),
        json.dumps(
            {
                "prompt": "Q: A is taller than B. Who is shorter?\nA:",
                "answer": "B",
                "distractors": ["A"],
                "meta": {"depth": 0.5},
            }
        ),
        json.dumps({"prompt": "p2", "answer": "x", "distractors": "y|z"}),
    ]
    path = _write(tmp_path / "mine.jsonl", rows)
    task = load_task(path)
    assert task.fmt == "plain" and task.meta["fmt_source"] == "file" and len(task) == 2
    assert task[0].distractors == ("A",) and task[0].meta == {"depth": 0.5}
    assert task[1].distractors == ("y", "z")
    # round trip keeps the optional fields
    from interp_heads.tasks.io import dumps_example

    assert json.loads(dumps_example(task[0]))["distractors"] == ["A"]
    assert "distractors" not in json.loads(dumps_example(Example("1", "t", "p", "a")))


def test_row_format_field_must_agree(tmp_path):
    rows = [
        json.dumps({"prompt": "a", "answer": "b", "fmt": "chat"}),
        json.dumps({"prompt": "c", "answer": "d"}),
    ]
    assert load_task(_write(tmp_path / "one.jsonl", rows)).fmt == "chat"
    rows.append(json.dumps({"prompt": "e", "answer": "f", "fmt": "plain"}))
    with pytest.raises(TaskFormatError, match=r"two.jsonl:3: fmt 'plain' differs"):
        load_task(_write(tmp_path / "two.jsonl", rows))
    with pytest.raises(TaskFormatError, match="fmt"):
        load_task(
            _write(
                tmp_path / "bad.jsonl", [json.dumps({"prompt": "a", "answer": "b", "fmt": "html"})]
            )
        )
    assert (
        load_task(_write(tmp_path / "none.jsonl", [json.dumps({"prompt": "a", "answer": "b"})])).fmt
        == "auto"
    )
