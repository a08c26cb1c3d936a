"""Search for a small sufficient head set: remove heads while the kept set stays faithful.

Ranking prefixes are not the only candidate sets: heads that matter together, or backup heads,
make sets that are sufficient without being a prefix of any single-head ranking. The search starts
from every head kept and removes heads in steps while faithfulness on the answer's log-prob
``f = (m(kept) - m(none kept)) / (m(all) - m(none kept))`` (``analysis.sufficiency``) stays at or
above ``target``; m is the mean log-probability of the answer's first token, every head not kept
ablated by a registered kind (:data:`ABLATIONS`) with values from the searched prompts, rewritten
as every sweep's mask rewrites it (``mean`` by default: its ``hook_z`` replaced by its mean over all
non-pad positions).

Each step re-ranks the kept heads by attribution patching on the current kept model
(``attribution.gradients.z_gradients`` with the heads already removed ablated: the estimated drop
of m when a kept head is ablated too, ``sum_pos grad . (z - z ablated)``, as ``ablation_atp``) and
tries removing the ``ceil(step * kept)`` cheapest; if that takes f below the target it backs off
to half as many, down to one; when removing the single cheapest head crosses it, the search stops,
or, with ``patience`` left, keeps that head for good and goes on with the next cheapest (the
estimate's order can be wrong where a head's ablation is far from linear: AtP's known failure).
Every trial is measured exactly (the trial's forward pass is the next step's attribution pass;
its backward pass is taken only when the search moves to that set: a rejected trial costs one
forward pass).

The set returned has f in the band ``[target, upper]`` (0.9 to 1.1 by default): a set that
recovers more than the whole model (f above ``upper``, heads removed that worked against the
answer) is not a faithful copy of it either (MIB's CMD counts ``|1 - f|``). On the way down a
trial is accepted when f >= target, over-recovering states included (removing the heads that
work against the answer early can be the way to a small set: on the tiny model a search that
refused them ended at 9 heads where the smallest set in the band has 5); the search then
returns the smallest set on its way whose f is in the band, normally its end. ``upper=None``
makes the band one-sided (f >= target), as a brute-force "smallest set with f >= 0.9" reads it.

Then the **1-minimality pass** (``minimal=True``, the default): every kept head is tried alone,
cheapest first; one whose removal keeps f in the band is removed, and the pass repeats until a
whole pass removes none. The result is 1-minimal (``SearchPath.one_minimal``): removing any one
kept head takes f out of the band, measured exactly on the final set. A greedy search without it
is not: the cheapest head's failure says nothing about the others'.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from interp_heads.analysis.kept_model import KeptModel
from interp_heads.attribution.inputs import Batch
from interp_heads.errors import InputError
from interp_heads.heads import Head, head_label

TARGET = 0.9  # the faithfulness a found set keeps (MIB's and the minimal set's 90%)
UPPER = 1.1  # the band's top: a kept set above it over-recovers
STEP = 0.1  # the share of the kept heads one step tries to remove
# single heads whose removal fails that the search keeps for good before it stops. On the tiny and
# planted models (bench/checks/search_minimality.py, 18 cases) patience 1 to 16 gave the same sets
# after the 1-minimality pass (0: one head more once); on SmolLM2 knowledge_recall
# (counterfactual) patience 0 stopped at 269 of 270 heads and 8 went on to 2 (docs/attribution.md),
# where the pass alone would try the 269 heads one at a time
PATIENCE = 8


@dataclass
class SearchPath:
    """A search's outcome: the kept ``heads`` it ended with, f there (``f``, on the searched
    examples), the two ends ``m_all`` / ``m_none`` and one row per trial in ``trials``."""

    heads: list[Head]
    f: float
    m_all: float
    m_none: float
    n_total: int
    trials: list[dict] = field(default_factory=list)
    target: float = TARGET
    # m per searched example: unablated, all ablated, and at each trial ([trial, example])
    examples: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    upper: float | None = UPPER  # the band's top (None: one-sided)
    patience: int = 0
    # True: removing any one kept head takes f out of the band (checked on this set); False: the
    # search stopped without the check (``minimal=False``)
    one_minimal: bool = False
    pruned: list[Head] = field(default_factory=list)  # the heads the 1-minimality pass removed

    def in_band(self, f: float) -> bool:
        """Whether ``f`` falls in ``[target, upper]``."""
        return in_band(f, self.target, self.upper)

    def steps(self) -> pd.DataFrame:
        """One row per trial: kept before, removed (tried), f after, accepted, whether f is in
        the band, and ``phase`` (``search``, or ``prune``: the 1-minimality pass)."""
        return pd.DataFrame(self.trials)

    def to_entry(self) -> dict:
        """The search as plain JSON values (a run folder's resume entry, ``from_entry`` reads it
        back equal): numbers as Python floats, ints and bools, arrays as lists."""
        return {
            "heads": [[int(a), int(b)] for a, b in self.heads],
            "pruned": [[int(a), int(b)] for a, b in self.pruned],
            "f": float(self.f), "m_all": float(self.m_all), "m_none": float(self.m_none),
            "n_total": int(self.n_total), "target": float(self.target),
            "upper": None if self.upper is None else float(self.upper),
            "patience": int(self.patience), "one_minimal": bool(self.one_minimal),
            "trials": [{k: _plain(v) for k, v in t.items()} for t in self.trials],
            "examples": {k: np.asarray(v, dtype=float).tolist() for k, v in self.examples.items()},
        }  # fmt: skip

    @classmethod
    def from_entry(cls, entry: dict) -> SearchPath:
        """The search :meth:`to_entry` wrote."""
        return cls(
            heads=[tuple(h) for h in entry["heads"]], f=entry["f"], m_all=entry["m_all"],
            m_none=entry["m_none"], n_total=entry["n_total"], trials=list(entry["trials"]),
            target=entry["target"], upper=entry["upper"], patience=entry["patience"],
            one_minimal=entry["one_minimal"], pruned=[tuple(h) for h in entry["pruned"]],
            examples={k: np.asarray(v, dtype=float) for k, v in entry["examples"].items()},
        )  # fmt: skip

    def size_interval(self, n_boot: int = 1000, seed: int = 0, level: float = 0.95):
        """A percentile interval of the set's size over the searched examples (resampled with
        replacement): per resample, the smallest set among those the search tried (every trial,
        accepted or not, and all heads) whose f on the resample keeps the target. Sets the search
        never tried are not counted, so the interval is over the search's own path: pages show
        the sizes a whole search finds on resampled examples instead
        (``analysis.search_resamples.resampled_sizes``)."""
        m = self.examples
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, len(m["all"]), (n_boot, len(m["all"])))
        ends = m["all"][idx].mean(1), m["none"][idx].mean(1)  # [boot]
        f = (m["trials"][:, idx].mean(2) - ends[1]) / (ends[0] - ends[1])  # [trial, boot]
        sizes = np.array([t["kept_before"] - t["tried"] for t in self.trials])
        kept = np.where(f >= self.target, sizes[:, None], self.n_total).min(0)
        tail = (1 - level) / 2 * 100
        return int(np.percentile(kept, tail)), int(np.percentile(kept, 100 - tail))


def _plain(value):
    """A trial's value as a JSON value: numpy scalars as Python bool, int or float."""
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return float(value)
    return value


def in_band(f: float, target: float = TARGET, upper: float | None = UPPER) -> bool:
    """Whether ``f`` falls in ``[target, upper]`` (``upper`` None: ``f >= target``)."""
    return bool(f >= target and (upper is None or f <= upper))


def search_heads(
    model, batches: Sequence[Batch], *, target: float = TARGET, step: float = STEP,
    ablation: str = "mean", seed: int = 0, patience: int = PATIENCE,
    upper: float | None = UPPER, minimal: bool = True,
    on_trial: Callable[[dict], None] | None = None,
) -> SearchPath:  # fmt: skip
    """The search of the module docstring on ``batches`` (``attribution.inputs.make_batches``);
    ``ablation``: one of ``analysis.kept_model.ABLATIONS`` (:class:`KeptModel`); ``seed`` seeds
    ``resample``'s draws; ``patience``: how many single heads whose removal fails are kept for
    good before the search stops (0: it stops at the first); ``upper``: the band's top (None:
    f >= ``target`` only); ``minimal``: end with the 1-minimality pass; ``on_trial(row)``: called
    after each trial with its row of :meth:`SearchPath.steps` (a long search's progress).

    Raises InputError for a target or step outside (0, 1], an ``upper`` below 1, and
    when ablating every head does not lower the answer's log-prob (f is then undefined: nothing
    to search for).
    """
    if not 0 < target <= 1 or not 0 < step <= 1:
        raise InputError(f"search target and step must be in (0, 1], got {target} and {step}")
    if upper is not None and not upper >= 1:  # the whole model (f = 1) is in the band
        raise InputError(f"the band's top must be >= 1 (f of every head kept), got {upper}")
    if isinstance(patience, bool) or not isinstance(patience, int) or patience < 0:
        raise InputError(f"search patience must be a whole number >= 0, got {patience!r}")
    kept_model = KeptModel(model, batches, ablation, seed)
    none = torch.zeros(kept_model.shape, dtype=torch.bool)
    m_all, cost, each_all = kept_model.run(none)
    gone = kept_model.forward(~none)  # no costs: nothing is kept
    m_none, each_none = gone.m, gone.each
    if not m_all > m_none:
        raise InputError(
            f"ablating every head does not lower the answer's log-prob ({m_all:.3f} unablated, "
            f"{m_none:.3f} all ablated): no head set to search for"
        )
    trials, each = [], []

    def measure(trial: torch.Tensor, kept: int, order, phase: str):
        """f of ``trial``; accepted on the way down when f >= target, in the pass when f is
        in the band."""
        passes = kept_model.forward(trial)
        each.append(passes.each)
        trial_f = (passes.m - m_none) / (m_all - m_none)
        band = in_band(trial_f, target, upper)
        ok = band if phase == "prune" else trial_f >= target
        trials.append({"kept_before": kept, "tried": len(order), "f": trial_f, "accepted": ok,
                       "in_band": band, "removed": ",".join(head_label(*h) for h in order),
                       "phase": phase})  # fmt: skip
        if on_trial is not None:
            on_trial(trials[-1])
        # the next step's ranking: the backward passes only for a kept set the search moves to
        return ok, trial_f, passes.cost() if ok else None

    ablated, pinned, f, failed = none, none.clone(), 1.0, {}
    best = (ablated, f, cost)  # the smallest kept set on the way down whose f is in the band
    while True:
        kept = int((~ablated).sum())
        order = [divmod(int(i), kept_model.shape[1]) for i in _cheapest(cost, ablated | pinned)]
        if not order:  # every kept head is pinned
            break
        n = max(1, math.ceil(step * len(order)))
        while True:
            trial = ablated.clone()
            for layer, head in order[:n]:
                trial[layer, head] = True
            ok, trial_f, trial_cost = measure(trial, kept, order[:n], "search")
            if ok or n == 1:
                break
            n = max(1, n // 2)  # back off: fewer heads this step
        if not ok:
            failed[order[0]] = _key(ablated)  # this head's removal failed on this kept set
        if not ok and int(pinned.sum()) < patience:
            pinned[order[0]] = True  # this head stays; go on with the next cheapest
            continue
        if not ok:
            break
        ablated, f, cost = trial, trial_f, trial_cost
        if in_band(f, target, upper):
            best = (ablated, f, cost)
    ablated, f, cost = best  # the end itself unless it over-recovers
    pruned = []
    if minimal:
        ablated, f, pruned = _one_minimal(measure, cost, ablated, f, failed, kept_model.shape)
    heads = [divmod(int(i), kept_model.shape[1]) for i in (~ablated).flatten().nonzero()[:, 0]]
    examples = {"all": each_all, "none": each_none, "trials": np.stack(each)}
    return SearchPath(heads, f, m_all, m_none, ablated.numel(), trials, target, examples,
                      upper, patience, minimal, pruned)  # fmt: skip


def _key(ablated: torch.Tensor) -> bytes:
    return ablated.flatten().numpy().tobytes()


def _one_minimal(measure, cost, ablated, f, failed: dict, shape):
    """The 1-minimality pass: each kept head tried alone, cheapest first by the current estimate,
    removed when f stays in the band; repeated until a whole pass removes none. A head whose
    removal already failed on this very kept set (``failed``: head -> the set's key) is not
    tried again. Returns the kept set (as ``ablated``), its f and the heads removed."""
    pruned, changed = [], True
    while changed:
        changed = False
        for i in _cheapest(cost, ablated):
            head = divmod(int(i), shape[1])
            if failed.get(head) == _key(ablated):
                continue
            trial = ablated.clone()
            trial[head] = True
            ok, trial_f, trial_cost = measure(trial, int((~ablated).sum()), [head], "prune")
            if ok:
                ablated, f, cost, changed = trial, trial_f, trial_cost, True
                pruned.append(head)
            else:
                failed[head] = _key(ablated)
    return ablated, f, pruned


def _cheapest(cost: torch.Tensor, ablated: torch.Tensor) -> list[int]:
    """The kept heads' flat indices, cheapest to ablate first (ties: lower index first)."""
    flat, gone = cost.flatten(), ablated.flatten()
    kept = (~gone).nonzero()[:, 0]
    return kept[torch.argsort(flat[kept], stable=True)].tolist()
