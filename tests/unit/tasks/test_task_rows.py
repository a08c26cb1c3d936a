"""What loading a task file refuses or warns about beyond its fields: a JSON key given twice
(refused, file:line), a distractor that is the answer (warned), and warnings on stderr that
name a task or file with bidi controls (shown without them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from interp_heads.tasks.io import TaskFormatError, read_task_file
from interp_heads.tasks.rows import TaskWarning
from tests.helpers import ROOT

ROW = {"id": "a", "prompt": "Repeat: cat\nAnswer:", "answer": "cat"}


def test_a_json_key_given_twice_is_refused_with_file_and_line(tmp_path):
    path = tmp_path / "t.jsonl"
    text = json.dumps(ROW) + "\n" + '{"id": "b", "prompt": "x", "answer": "dog", "answer": "cat"}\n'
    path.write_text(text)
    with pytest.raises(TaskFormatError, match=r"t\.jsonl:2: key 'answer' given twice"):
        read_task_file(path)


@pytest.mark.parametrize("distractor", ["cat", " Cat ", "kitty"])
def test_a_distractor_that_is_the_answer_warns_at_load(tmp_path, distractor):
    path = tmp_path / "t.jsonl"
    row = {**ROW, "aliases": ["kitty"], "distractors": ["dog", distractor]}
    path.write_text(json.dumps(row) + "\n")
    with pytest.warns(TaskWarning, match=r"t\.jsonl:1: distractor .* of example 'a' is its answer"):
        read_task_file(path)


def test_distinct_distractors_load_without_a_warning(tmp_path, recwarn):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({**ROW, "distractors": ["dog"]}) + "\n")
    read_task_file(path)
    assert not [w for w in recwarn if issubclass(w.category, TaskWarning)]


def test_warnings_on_stderr_carry_no_bidi_controls(tmp_path):
    path = tmp_path / "\u202eevil\u2066.jsonl"
    path.write_text(json.dumps({**ROW, "distractors": ["cat"]}) + "\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "interp_heads.cli", "tasks", "show", str(path)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert "warning:" in done.stderr and "evil" in done.stderr, done.stderr
    assert "\u202e" not in done.stderr and "\u2066" not in done.stderr


def test_error_and_warning_lines_drop_bidi_controls():
    from interp_heads.cli.parser import cut_line

    assert cut_line("task '\u202eevil\u200f' has no examples") == "task 'evil' has no examples"
