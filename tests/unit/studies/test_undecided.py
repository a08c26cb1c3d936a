"""A cell's verdict with its metric's blind spot: the reason comes first, "no" never stands in
for it (``sweep.verdict.collapse``, the one verdict every page gives)."""

from __future__ import annotations

import pandas as pd

from interp_heads.sweep.verdict import collapse, decide, is_decided

# TopK below RandomK by 0.9 with Holm p 0.001, 24 examples, 5 draws: a yes by hand
YES = (-0.9, 0.001, 24, 5)
NO = (0.0, 1.0, 24, 5)  # nothing dropped: a "no" where there was nothing to remove


def test_a_reason_makes_the_cell_undecided_and_none_leaves_the_verdict():
    assert collapse(*YES) == "yes"
    assert collapse(*NO) == "no"
    assert collapse(*NO, undecided="unmasked 0.00") == "undecided: unmasked 0.00"
    assert collapse(*YES, undecided="blind") == "undecided: blind"  # even a would-be yes
    assert not is_decided("undecided: unmasked 0.00") and is_decided("no") and is_decided("yes")
    assert not is_decided("undecided (n = 1; 10 needed)")


def test_the_undecided_column_reaches_every_row_of_a_page():
    frame = pd.DataFrame(
        {"diff": [-0.9, 0.0], "p_value": [1e-6, 1.0], "n_examples": [24, 24], "n_draws": [5, 5],
         "undecided": ["the metric cannot score plain answers", None]}
    )  # fmt: skip
    out = decide(frame)
    assert list(out.collapses) == ["undecided: the metric cannot score plain answers", "no"]
