"""Built-in task generation: reproducible, byte-identical, well-formed corrupted pairs."""

from __future__ import annotations

import pytest

from interp_heads.tasks import BUILTIN_TASKS, build_all, build_task, load_task
from interp_heads.tasks.io import data_dir


def test_rebuild_is_byte_identical_to_committed_files(tmp_path):
    paths = build_all(tmp_path)
    for name in BUILTIN_TASKS:
        committed = data_dir() / f"{name}.jsonl"
        assert paths[name].read_bytes() == committed.read_bytes(), name


def test_two_builds_identical(tmp_path):
    a = build_all(tmp_path / "a", n=50)
    b = build_all(tmp_path / "b", n=50)
    for name in BUILTIN_TASKS:
        assert a[name].read_bytes() == b[name].read_bytes()


def test_seed_changes_data():
    assert (
        build_task("math_calculation", n=20, seed=1).examples
        != build_task("math_calculation", n=20, seed=0).examples
    )


@pytest.mark.parametrize("name", BUILTIN_TASKS)
def test_builtin_rows_are_well_formed(name):
    task = load_task(name)
    assert len(task) >= 300
    assert len({e.id for e in task}) == len(task)
    assert len({e.prompt for e in task}) == len(task)
    for e in task:
        assert e.task == name and e.answer and e.question and e.corrupted_prompt
        assert e.corrupted_prompt != e.prompt
        # answers start with different characters, so their first tokens differ
        assert e.answer[0] != e.corrupted_answer[0], e
        # same template: only swapped words differ
        assert len(e.prompt.split()) == len(e.corrupted_prompt.split())
        assert e.answer not in e.aliases


def test_unknown_task():
    with pytest.raises(ValueError, match="unknown built-in task"):
        build_task("nope")


def test_needle_in_a_haystack_rows():
    from interp_heads.tasks.builder import build_task
    from interp_heads.tasks.facts import OBJECTS

    task = build_task("retrieval", n=60)
    depths, sizes = set(), set()
    for e in task:
        assert e.prompt.count(f" is {e.answer}.") == 1 and e.answer in OBJECTS
        assert (
            e.corrupted_prompt.replace(f" is {e.corrupted_answer}.", f" is {e.answer}.") == e.prompt
        )
        assert e.answer[0] != e.corrupted_answer[0]
        others = [w for w in OBJECTS if w != e.answer]
        assert not any(f" {w} " in f" {e.prompt} " or f" {w}." in e.prompt for w in others)
        depths.add(e.meta["depth"])
        sizes.add(e.meta["n_sentences"])
    assert len(depths) == 5 and len(sizes) == 5


def test_keyed_retrieval_distractors():
    from interp_heads.tasks.builder import build_task

    for e in build_task("retrieval_keyed", n=20):
        assert len(e.distractors) == 2 and e.answer not in e.distractors
        assert all(f"lives in {c}." in e.prompt for c in (e.answer, *e.distractors))
        assert e.corrupted_answer in e.distractors
