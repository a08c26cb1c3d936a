"""Answer checking: normalisation and the whole-word match rule."""

from __future__ import annotations

import pytest

from interp_heads.tasks.checking import first_line, is_correct, normalize


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Paris.", "paris"),
        ("  The Eiffel Tower ", "eiffel tower"),
        ("1,000", "1000"),
        ("12,345,678", "12345678"),
        ("twelve", "12"),
        ("Twenty-one", "21"),
        ("one hundred and five", "105"),
        ("two thousand and twenty", "2020"),
        ("one two", "1 2"),
        ("-5", "-5"),
        ("3.5.", "3.5"),
        ("Answer: 42!", "answer 42"),
        ("", ""),
    ],
)
def test_normalize(text, expected):
    assert normalize(text) == expected


@pytest.mark.parametrize(
    ("generation", "answer", "ok"),
    [
        ("Paris.", "paris", True),
        ("paris", "Paris", True),
        ("The capital of France is Paris.", "Paris", True),
        ("12", "120", False),
        ("120", "12", False),
        ("The answer is 120.", "12", False),
        ("twelve", "12", True),
        ("12", "twelve", True),
        ("1,000", "1000", True),
        ("1000", "1,000", True),
        ("\n\n   42\n", "42", True),
        ("\n\n   41\n42", "42", False),  # only the first non-empty line counts
        ("", "42", False),
        ("   \n  ", "42", False),
        ("42", "", False),
        ("Parisian", "Paris", False),
        ("New York City", "York", True),
        ("-3", "3", False),
        ("3", "-3", False),
    ],
)
def test_is_correct(generation, answer, ok):
    assert is_correct(generation, answer) is ok


def test_aliases():
    assert is_correct("The USA.", "United States", aliases=("USA", "America"))
    assert not is_correct("Canada", "United States", aliases=("USA",))


def test_first_line():
    assert first_line("\n \n  hello \nworld") == "hello"
    assert first_line("") == ""


def test_distractor_named_is_wrong():
    from interp_heads.tasks.checking import is_correct

    assert is_correct("Henry", "Henry", distractors=["Will"])
    assert not is_correct("Henry and Will", "Henry", distractors=["Will"])
    assert not is_correct("Will", "Henry", distractors=["Will"])
    assert is_correct("Will is slower, so Henry", "Henry") and not is_correct(
        "Will is slower, so Henry", "Henry", distractors=["Will"]
    )
    # a distractor that is part of the answer itself does not count against it
    assert is_correct("New York", "New York", distractors=["York"])
    # only the first line counts
    assert is_correct("Henry\nWill", "Henry", distractors=["Will"])
