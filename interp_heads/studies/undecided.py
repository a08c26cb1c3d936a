"""A cell's verdict with the metric's blind spots: "undecided: <reason>" before any "no".

``studies.compare_tables.collapses`` decides TopK against RandomK from the numbers; whether the
cell's metric could have scored it at all (its answer format, its unmasked score above the floor)
is ``metrics.scorable``'s question. :func:`verdict` asks both, and passes the reason to
``collapses`` as its ``undecided`` input when it takes one.
"""

from __future__ import annotations

import inspect


def verdict(collapses, top_drop, control_drop, diff_high, n_examples, n_draws, significant=True,
            undecided: str | None = None) -> str:  # fmt: skip
    """``collapses``'s verdict (``compare_tables.collapses``, passed in: that module reads this
    one), or ``"undecided: <undecided>"`` when a reason is given."""
    args = (top_drop, control_drop, diff_high, n_examples, n_draws, significant)
    if "undecided" in inspect.signature(collapses).parameters:
        return collapses(*args, undecided=undecided)
    return f"undecided: {undecided}" if undecided else collapses(*args)


def decided(text: str) -> bool:
    """Whether a verdict is a plain ``yes`` or ``no`` (not undecided, not "..., but too few")."""
    return text in ("yes", "no")
