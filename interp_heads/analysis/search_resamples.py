"""How much a searched set's size depends on the examples: the whole search again on resamples.

A found set's size is one search's answer on one draw of examples. To show how it moves, the same
search (``analysis.head_search.search_heads``, with the same options: patience, band, the
1-minimality pass) is run again on ``resamples`` bootstrap resamples of the searched examples
(drawn with replacement, ``seed``), each with its own ablation values. The sizes it finds are
shown as a distribution (:func:`size_summary`: min / median / max and how often each size came
up), not as an interval over the first search's own path, which never counts sets that path did
not try (``SearchPath.size_interval``: [105, 105] said nothing about other paths).

An example a resample draws c times runs once and counts c times (``Batch.weight``: in m, in
the ranking's gradient terms and in the ablation values), which gives the search over the c
copies (f to float rounding) on about 0.63 of the rows. Under ``resample`` ablation a removed
head's prompt is drawn from the same rows with the same probabilities, in another order.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from interp_heads.errors import InputError


def resampled_sizes(
    model, task, *, resamples: int, seed: int = 0, fmt: str = "auto", batch_size: int = 16,
    corrupted: bool = False, done: Mapping[int, int | None] | None = None,
    on_size: Callable[[int, int | None], None] | None = None,
    on_trial: Callable[[int, dict], None] | None = None, **search,
) -> list[int | None]:  # fmt: skip
    """The size of the set ``search_heads(**search)`` finds on each of ``resamples`` resamples of
    ``task``'s examples (None where a resample has nothing to search for: ablating every head
    does not lower its answer log-prob). ``corrupted``: batches with the corrupted prompts (the
    counterfactual ablation).

    Each resample is a whole search, so a run folder keeps each size as it comes: ``done`` holds
    the sizes of resamples already searched (by index; they are not searched again, and the
    draws of the others are the same), ``on_size(i, size)`` is called after each new one, and
    ``on_trial(i, row)`` after each of its trials (``search_heads``' ``on_trial``)."""
    import torch

    from interp_heads.analysis.head_search import search_heads
    from interp_heads.attribution.inputs import make_batches
    from interp_heads.attribution.memory import gradient_rows
    from interp_heads.tasks.schema import Task

    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 0:
        raise InputError(f"resamples must be a whole number >= 0, got {resamples!r}")
    rng = np.random.default_rng(seed)
    n, sizes = len(task.examples), []
    done = done or {}
    for r in range(resamples):
        drawn = rng.integers(0, n, n)  # drawn for every resample: the stream does not move
        if r in done:
            sizes.append(done[r])
            continue
        # an example drawn c times runs once and counts c times (Batch.weight): the same sums
        # as c rows, on fewer rows (a resample of n holds about 0.63 n distinct examples)
        times = Counter(int(i) for i in drawn)
        examples = [task.examples[i] for i in sorted(times)]
        sub = Task(task.name, examples, task.source, task.sha256, dict(task.meta))
        batches = make_batches(model, sub, batch_size=batch_size, fmt=fmt, corrupted=corrupted,
                               rows_for_width=gradient_rows(model, batch_size))  # fmt: skip
        count = {task.examples[i].id: c for i, c in times.items()}
        batches = [dataclasses.replace(b, weight=torch.tensor([count[e] for e in b.ids]))
                   for b in batches]  # fmt: skip
        try:
            each = None if on_trial is None else (lambda row, r=r: on_trial(r, row))
            sizes.append(len(search_heads(model, batches, seed=seed, on_trial=each,
                                          **search).heads))  # fmt: skip
        except InputError:
            sizes.append(None)
        if on_size is not None:
            on_size(r, sizes[-1])
    return sizes


def size_summary(sizes: Sequence[int | None]) -> str:
    """The sizes in words: ``min 2 / median 3 / max 5 over 5 resamples (2: 1, 3: 3, 5: 1)``;
    resamples with nothing to search for are counted apart; "not resampled" for none."""
    got = sorted(int(s) for s in sizes if s is not None and s == s)
    undefined = len(sizes) - len(got)
    if not got:
        return "not resampled" if not sizes else f"undefined on all {len(sizes)} resamples"
    counts = ", ".join(f"{k}: {v}" for k, v in sorted(Counter(got).items()))
    median = float(np.median(got))
    median_s = f"{median:.0f}" if median == int(median) else f"{median:.1f}"
    said = f"min {got[0]} / median {median_s} / max {got[-1]} over {len(got)} resamples ({counts})"
    return said + (f"; {undefined} undefined" if undefined else "")


def sizes_text(sizes: Sequence[int | None]) -> str:
    """The sizes as a table cell's plain list (``3,3,5``; ``-`` for an undefined resample)."""
    return ",".join("-" if s is None else str(int(s)) for s in sizes)


def parse_sizes(text) -> list[int | None]:
    """:func:`sizes_text` read back (empty or missing: no resamples)."""
    if isinstance(text, numbers.Real) and text == text:  # one size, read back as a number
        return [int(text)]
    if not isinstance(text, str) or not text.strip():
        return []
    return [None if t == "-" else int(t) for t in text.split(",")]
