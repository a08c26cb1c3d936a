"""A small sufficient head set from Python: :func:`find_sufficient_set` and its :class:`SufficientSet`.

``interp_heads.find_sufficient_set(model, task)`` splits the task's examples in two: it searches
on the first ``n_search`` (``analysis.head_search.search_heads``: remove heads while f on the
answer's log-prob stays in the band [target, upper], attribution re-ranked each step, with
patience, then a 1-minimality pass), then verifies the set it found on the others, held out, by
the sweep (``sweep.loop.run_sweep``: generation accuracy and the logit metrics, every head not
kept ablated with the sweep's own means of the held-out prompts), beside the ranking's prefix of
the same size and random kept sets of the same size.

A set is **found** only when it holds held out (:func:`set_status`): its f on the answer's
log-prob, and on ``kl_unmasked`` where that was measured, falls in the band. Below the target on
either it is "not verified"; above the band's top it "over-recovers" (a set with log-prob f 1.15
and KL f 0.37 recovers the answer's probability without the rest of the output distribution).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd

from interp_heads.analysis.head_search import (
    PATIENCE,
    STEP,
    TARGET,
    UPPER,
    SearchPath,
    search_heads,
)
from interp_heads.analysis.kept_model import COUNTERFACTUAL, KeptModel
from interp_heads.analysis.sufficiency import faithfulness_curves
from interp_heads.errors import InputError
from interp_heads.heads import Head, head_label

SETS = ("found", "ranking prefix", "random")  # the kept sets a found set is verified beside
BAND_METRICS = ("answer_logprob", "kl_unmasked")  # the held-out f a found set must keep in band
FOUND, NOT_VERIFIED, OVER = "found", "not verified", "over-recovers"


def set_status(verified: pd.DataFrame, target: float = TARGET,
               upper: float | None = UPPER) -> tuple[str, str]:  # fmt: skip
    """A searched set's status from its held-out rows (``verify_set``'s table, or a run's
    ``sufficient_sets.csv`` rows of one task): ``found`` when the found set's f on each of
    :data:`BAND_METRICS` it has falls in ``[target, upper]``; ``not verified`` when one falls
    below the target; ``over-recovers`` when none is below and one is above ``upper``; with the
    reason in words (``answer_logprob f 0.86 < 0.90``). Point estimates decide (the interval is
    shown beside them)."""
    rows = verified[(verified["set"] == "found") & verified["metric"].isin(BAND_METRICS)]
    fs = {str(r.metric): float(r.f) for r in rows.itertuples()}
    fs = {m: f for m, f in fs.items() if f == f}
    if not fs:
        return NOT_VERIFIED, "no held-out f on log-prob or KL (no change to recover)"
    low = [f"{m} f {f:.2f} < {target:.2f}" for m, f in fs.items() if f < target]
    high = [
        f"{m} f {f:.2f} > {upper:.2f}" for m, f in fs.items() if upper is not None and f > upper
    ]
    if low:
        return NOT_VERIFIED, "; ".join(low + high)
    if high:
        return OVER, "; ".join(high)
    return FOUND, ", ".join(f"{m} f {f:.2f}" for m, f in fs.items()) + " in the band"


@dataclass
class SufficientSet:
    """A found set and its verification. ``path``: the search (``.steps()``: every trial);
    ``verified``: per kept set (:data:`SETS`) and metric, f with its 95% interval over held-out
    examples (and draws), and the metric's mean (accuracy: the kept model's accuracy)."""

    task: str
    path: SearchPath
    verified: pd.DataFrame
    ranking: list[Head]
    n_search: int
    n_held_out: int
    # the sizes the same search finds on resamples of the searched examples (None: undefined)
    resampled: list[int | None] = field(default_factory=list)

    @property
    def status(self) -> str:
        """``found``, ``not verified`` or ``over-recovers`` on the held-out examples
        (:func:`set_status`)."""
        return set_status(self.verified, self.path.target, self.path.upper)[0]

    @property
    def one_minimal(self) -> bool:
        return self.path.one_minimal

    @property
    def heads(self) -> list[Head]:
        return self.path.heads

    @property
    def size(self) -> int:
        return len(self.path.heads)

    def table(self) -> pd.DataFrame:
        """One row per kept set and metric: f [low, high] and the mean on held-out examples."""
        return self.verified

    def __repr__(self) -> str:
        labels = ", ".join(head_label(*h) for h in self.heads[:8])
        more = f", ... ({self.size} heads)" if self.size > 8 else ""
        return (
            f"SufficientSet(task={self.task!r}, heads=[{labels}{more}], size={self.size} of "
            f"{self.path.n_total}, f on the searched examples={self.path.f:.3f}, "
            f"1-minimal={self.one_minimal}, held out: {self.status})"
        )


def find_sufficient_set(
    model, task, ranking=None, *, target: float = TARGET, step: float = STEP,
    n_search: int | None = None, method: str = "auto", seeds: int = 3,
    metrics: Sequence[str] = ("accuracy", "answer_logprob"), max_new_tokens: int = 8,
    batch_size: int = 16, fmt: str | None = None, out_dir=None, n_boot: int = 1000,
    ablation: str = "mean", patience: int = PATIENCE, upper: float | None = UPPER,
    minimal: bool = True, resamples: int = 0,
) -> SufficientSet:  # fmt: skip
    """Search ``task``'s first ``n_search`` examples (None: half) for a small head set keeping
    f >= ``target`` on the answer's log-prob, removing about ``step`` of the kept heads per step,
    and verify it on the other examples beside the ranking's prefix of its size and ``seeds``
    random kept sets of its size.

    ``task``: a ``Task`` (filter it to correctly answered examples first, ``take_correct``) or a
    built-in's name; ``ranking``: a ``HeadScores`` or heads most important first (None:
    ``attribute_heads(model, searched examples, method)``); ``out_dir``: where the verification
    sweeps are stored and resumed; ``ablation``: what every head not kept becomes, in the search
    and the verification (``analysis.kept_model.ABLATIONS``). ``counterfactual`` (each example's
    own corrupted prompt, MIB's choice) needs the task's corrupted prompts and is verified on the
    answer's log-prob only (:func:`verify_counterfactual`; ``metrics`` and the generation options
    do not apply). ``patience``: single heads whose removal fails kept for good before the search
    stops; ``upper``: the band's top (None: f >= ``target`` only); ``minimal``: the 1-minimality
    pass (``analysis.head_search.search_heads``); ``resamples``: how many bootstrap resamples of the
    searched examples the same search runs on again (``resampled``: the sizes it finds there;
    each costs one whole search).
    """
    from interp_heads.attribution.inputs import make_batches
    from interp_heads.attribution.memory import gradient_rows
    from interp_heads.interventions.selections import ranked_heads
    from interp_heads.tasks.schema import Task

    if isinstance(task, str):
        from interp_heads.tasks import load_task

        task = load_task(task)
    n = len(task.examples) // 2 if n_search is None else int(n_search)
    if not 0 < n < len(task.examples):
        raise InputError(
            f"task {task.name!r}: n_search must leave examples on both sides, got {n} of "
            f"{len(task.examples)}"
        )
    searched = Task(task.name, task.examples[:n], task.source, task.sha256, dict(task.meta))
    held = Task(task.name, task.examples[n:], task.source, task.sha256, dict(task.meta))
    own = fmt or getattr(task, "fmt", None) or "auto"  # as attribute_heads and the sweep read it
    patched = ablation == COUNTERFACTUAL
    batches = make_batches(model, searched, batch_size=batch_size, fmt=own, corrupted=patched,
                           rows_for_width=gradient_rows(model, batch_size))  # fmt: skip
    search = dict(target=target, step=step, ablation=ablation, patience=patience, upper=upper,
                  minimal=minimal)  # fmt: skip
    path = search_heads(model, batches, **search)
    resampled = []
    if resamples:
        from interp_heads.analysis.search_resamples import resampled_sizes

        resampled = resampled_sizes(model, searched, resamples=resamples, fmt=own,
                                    batch_size=batch_size, corrupted=patched, **search)  # fmt: skip
    if ranking is None:
        from interp_heads.attribution import attribute_heads

        ranking = attribute_heads(model, searched, method, batch_size=batch_size, fmt=fmt)
    ranked = ranked_heads(ranking)
    opts = dict(seeds=seeds, metrics=list(metrics), max_new_tokens=max_new_tokens, fmt=fmt,
                batch_size=batch_size, out_dir=out_dir, n_boot=n_boot,
                ablation=ablation)  # fmt: skip
    verified = (
        verify_counterfactual(model, held, path.heads, ranked, seeds=seeds, fmt=own,
                              batch_size=batch_size, n_boot=n_boot)
        if patched else verify_set(model, held, path.heads, ranked, **opts)
    )  # fmt: skip
    return SufficientSet(task.name, path, verified, ranked, n, len(held.examples), resampled)


def verify_set(
    model, task, heads: Sequence[Head], ranking: Sequence[Head], *, seeds: int = 3,
    metrics: Sequence[str] = ("accuracy", "answer_logprob"), max_new_tokens: int = 8,
    fmt: str | None = None, batch_size: int = 16, out_dir=None, n_boot: int = 1000,
    force: bool = False, ablation: str = "mean",
) -> pd.DataFrame:  # fmt: skip
    """f per metric on ``task`` of ``heads`` kept (every other head ablated), of ``ranking``'s
    prefix of the same size and of random kept sets of that size (:data:`SETS`). ``force``:
    reuse ``out_dir`` when it holds another set's sweep (``run_sweep``)."""
    from pathlib import Path

    from interp_heads.sweep.loop import SweepConfig, run_sweep

    n_total = model.cfg.n_layers * model.cfg.n_heads
    size, found = len(heads), list(heads)
    first = found + [h for h in ranking if h not in set(found)]  # the found set as a ranking
    frames = []
    for name, order, selections in (
        ("found", first, ["all_but_topk", "all_but_randomk"]),
        ("ranking prefix", list(ranking), ["all_but_topk"]),
    ):
        config = SweepConfig(ks=[0, size], selections=selections, seeds=seeds, fmt=fmt,
                             metrics=list(metrics), max_new_tokens=max_new_tokens,
                             ablation=ablation)  # fmt: skip
        where = None if out_dir is None else Path(out_dir) / name.replace(" ", "_")
        result = run_sweep(model, {task.name: task}, {task.name: order}, config,
                           batch_size=batch_size, out_dir=where, force=force,
                           progress=False)  # fmt: skip
        curves, _ = faithfulness_curves(result.records, n_total, n_boot=n_boot)
        at = curves[(curves.k == size) & curves.curve.isin(["ranking", "random"])]
        frames.append(at.assign(set=at.curve.map({"ranking": name, "random": "random"})))
    out = pd.concat(frames, ignore_index=True)[COLUMNS[:-1]].assign(k=size)
    return out.sort_values("set", key=lambda s: s.map(SETS.index), kind="stable").reset_index(
        drop=True
    )


COLUMNS = ["set", "metric", "f", "f_low", "f_high", "mean", "full", "empty", "n_draws",
           "n_examples", "k"]  # fmt: skip


def verify_counterfactual(
    model, task, heads: Sequence[Head], ranking: Sequence[Head], *, seeds: int = 3,
    fmt: str | None = None, batch_size: int = 16, n_boot: int = 1000, seed: int = 0,
) -> pd.DataFrame:  # fmt: skip
    """:func:`verify_set` under counterfactual ablation: every head not kept takes its ``z`` on
    the example's own corrupted prompt (``KeptModel``), f on the answer's log-prob of ``task``'s
    examples (teacher-forced: there are no corrupted activations for generated tokens), for
    ``heads``, ``ranking``'s prefix of the same size and ``seeds`` random sets of that size; the
    interval is a percentile bootstrap over examples (draws averaged per example)."""
    import numpy as np
    import torch

    from interp_heads.attribution.inputs import make_batches

    batches = make_batches(model, task, batch_size=batch_size, fmt=fmt or "auto", corrupted=True)
    kept = KeptModel(model, batches, COUNTERFACTUAL)
    n_layers, n_heads = kept.shape

    def m_of(keep) -> np.ndarray:  # m per example with only ``keep`` not patched
        ablated = torch.ones(kept.shape, dtype=torch.bool)
        for layer, head in keep:
            ablated[layer, head] = False
        return kept.forward(ablated).each

    every = [(layer, head) for layer in range(n_layers) for head in range(n_heads)]
    full, empty, size = m_of(every), m_of([]), len(heads)
    rng = np.random.default_rng(seed)
    draws = [[every[i] for i in rng.choice(len(every), size, replace=False)] for _ in range(seeds)]
    idx = rng.integers(0, len(full), (n_boot, len(full)))
    rows = []
    for name, sets in (("found", [list(heads)]), ("ranking prefix", [list(ranking[:size])]),
                       ("random", draws)):  # fmt: skip
        m = np.mean([m_of(keep) for keep in sets], axis=0)  # [example]
        f = (m.mean() - empty.mean()) / (full.mean() - empty.mean())
        boot = (m[idx].mean(1) - empty[idx].mean(1)) / (full[idx].mean(1) - empty[idx].mean(1))
        low, high = np.percentile(boot, [2.5, 97.5])
        rows.append([name, "answer_logprob", f, low, high, m.mean(), full.mean(), empty.mean(),
                     len(sets), len(full), size])  # fmt: skip
    return pd.DataFrame(rows, columns=COLUMNS)
