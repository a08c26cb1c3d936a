"""The four built-in tasks in the Cognitive Mirrors prompt format (``data/cognitive_mirrors``)."""

from __future__ import annotations

from interp_heads.tasks import cognitive_mirrors as cm


def test_builtin_tasks_in_the_study_format_rebuild_identically(tmp_path):
    from interp_heads.tasks.cm_builder import build, default_dir
    from interp_heads.tasks.io import load_task

    for name, path in build(tmp_path).items():
        assert path.read_bytes() == (default_dir() / path.name).read_bytes()
        task, plain = load_task(path), load_task(name)
        assert task.name == name and task.fmt == "cognitive_mirrors" and len(task) == 160
        assert [(e.id, e.answer) for e in task] == [(e.id, e.answer) for e in plain][:160]
        assert all(cm.is_study_prompt(e.prompt) for e in task)
    math = load_task(tmp_path / "math_calculation.jsonl")[0]  # "What is 5 plus 1?" -> 6
    assert "Q1: What is the first number to add?\nA1: 5\nQ2: What is the second number to add?" \
        "\nA2: 1\n</prior_knowledge>" in math.prompt  # fmt: skip
    inference = load_task(tmp_path / "inference.jsonl")[0]
    assert inference.question == "Who is faster?" and inference.distractors == ("Will",)
    assert "A1: Will is slower than Henry.\n</prior_knowledge>" in inference.prompt
