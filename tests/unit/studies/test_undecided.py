"""A cell's verdict with its metric's blind spot: the reason comes first, "no" never stands in
for it; the verdict function gets the reason when it takes one."""

from __future__ import annotations

from interp_heads.studies.compare_tables import collapses
from interp_heads.studies.undecided import decided, verdict

# TopK drops 1.0, RandomK 0.1, the interval below 0, 24 examples, 5 draws: a yes by hand
YES = (1.0, 0.1, -0.5, 24, 5, True)
NO = (0.0, 0.0, 0.0, 24, 5, False)  # nothing dropped: a "no" where there was nothing to remove


def test_a_reason_makes_the_cell_undecided_and_none_leaves_the_verdict():
    assert verdict(collapses, *YES) == collapses(*YES) == "yes"
    assert verdict(collapses, *NO) == "no"
    assert verdict(collapses, *NO, undecided="unmasked 0.00") == "undecided: unmasked 0.00"
    assert not decided("undecided: unmasked 0.00") and decided("no") and decided("yes")
    assert not decided("no, but too few examples to decide (n = 1; 10 needed)")


def test_a_verdict_function_that_takes_the_reason_gets_it():
    seen = {}

    def takes(*args, undecided=None):
        seen["reason"] = undecided
        return f"theirs: {undecided}"

    assert verdict(takes, *NO, undecided="blind") == "theirs: blind" and seen["reason"] == "blind"
