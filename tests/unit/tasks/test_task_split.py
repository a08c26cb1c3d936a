"""``Task.split``: two disjoint, non-empty parts, or a one-line error saying why not."""

from __future__ import annotations

import pytest

from interp_heads.tasks.schema import Example, Task


def task(n: int, **meta) -> Task:
    return Task("t", [Example(str(i), "t", f"p{i}", "a") for i in range(n)], meta=meta)


def test_split_gives_two_disjoint_parts():
    a, b = task(4).split(1)
    assert [e.id for e in a] == ["0"] and [e.id for e in b] == ["1", "2", "3"]


@pytest.mark.parametrize("n_first", [4, 12, 0, -1])
def test_a_split_leaving_a_part_empty_is_refused(n_first):
    with pytest.raises(ValueError, match=rf"has 4 example\(s\): split\({n_first}\) would leave"):
        task(4).split(n_first)


def test_the_error_says_what_the_filter_kept():
    kept = task(4, filter={"n_before": 42, "fmt": "chat"})
    with pytest.raises(ValueError, match="filter_correct kept 4 of 42 in prompt format 'chat'"):
        kept.split(12)


def test_a_float_is_refused(untyped):
    with pytest.raises(ValueError, match="n_first must be an integer"):
        task(4).split(2.0)


def test_allow_empty_gives_the_empty_part():
    a, b = task(4).split(12, allow_empty=True)
    assert len(a) == 4 and len(b) == 0
