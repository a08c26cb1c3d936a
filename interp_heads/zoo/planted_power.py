"""Power and false-positive rate of the verdict rules on trained models, where every head set's
true effect is known.

``analysis.calibration`` simulates records. Here the records are a zoo model's own: for each
``k`` every set of ``k`` heads is mean-ablated on ``blocks.{l}.attn.hook_z`` (teacher forcing,
``zoo.truth.prompt_metrics``), and each prompt the unmasked model answers correctly scores 1 when
the masked model still answers it (argmax at the last position). So the RandomK population is the
real one, heavy tail included (a random set that holds a critical head falls), and a TopK set's
**true drop** is known exactly: the mean over RandomK draws (every ``k``-set outside TopK, as the
pages draw) of their accuracy minus TopK's, on every evaluated prompt.

A cell is what a page holds: ``n`` prompts drawn from the correct ones, TopK's 0/1 scores and
``draws`` RandomK draws' scores on them. The rules are decided over families of
``analysis.calibration.FAMILY`` cells, as the pages' Holm adjustment is.

- ``zoo_null``: TopK and the draws are ``draws + 1`` independent random ``k``-sets of every head,
  the first relabelled as TopK (RandomK against RandomK on trained weights): the sets are
  exchangeable, so every "yes" is a false positive. (Drawing the controls outside a random TopK
  would not be a null: a TopK that happens to hold a critical head is then truly worse than every
  draw.);
- ``zoo_power``: TopK is a set whose true drop lies in a bin of :data:`BINS` (``effect`` and
  ``effect_high``: the bin's edges; ``true_drop``: the mean true drop of the sets drawn): the share of "yes" is
  the rule's power at that true drop.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np
import torch

from interp_heads.analysis import calibration as cal
from interp_heads.zoo.truth import ablated_z, keep_matrix, prompt_metrics, truth_batch

KS = (1, 2, 3)  # TopK sizes: 12-38% of 8 heads, 8-25% of 12 (the pages: 32 of 270, 12%)
BINS = ((0.1, 0.3), (0.3, 0.5), (0.5, 0.7), (0.7, 1.01))  # true drop of TopK below RandomK
KIND = "mean"  # the causal protocol's intervention


@dataclass
class Population:
    """Every ``k``-set of one model (``sets``: bitmasks of the ablated heads) and its 0/1 score
    on each correctly answered prompt (``hits``: ``[set, prompt]``)."""

    name: str
    k: int
    n_total: int
    sets: np.ndarray
    hits: np.ndarray

    def outside(self, i: int) -> np.ndarray:
        """The sets sharing no head with set ``i`` (the pages' RandomK pool outside TopK)."""
        return np.flatnonzero((self.sets & self.sets[i]) == 0)

    def true_drops(self) -> np.ndarray:
        """Per set: the mean accuracy of the sets outside it minus its own accuracy."""
        acc = self.hits.mean(1)
        return np.array([acc[self.outside(i)].mean() - acc[i] for i in range(len(self.sets))])


def populations(zm, n_prompts: int = 256, ks=KS, kind: str = KIND) -> list[Population]:
    """One :class:`Population` per ``k`` of a trained zoo model (``ZooModel``) on ``n_prompts``
    held-out prompts, of which the unmasked model's correct ones are kept."""
    model, task = zm.model, zm.held_out(n_prompts)
    batch = truth_batch(model, task)
    n_layers, n_heads = model.cfg.n_layers, model.cfg.n_heads
    n_total = n_layers * n_heads
    full = (1 << n_total) - 1
    ablated = ablated_z(model, batch, kind, [e.prompt for e in task])
    with torch.no_grad():
        clean = model(batch.clean)[:, -1].argmax(-1) == batch.answer
    correct = clean.numpy()
    out = []
    for k in ks:
        sets = [sum(1 << i for i in c) for c in combinations(range(n_total), k)]
        keep = keep_matrix([full & ~m for m in sets], n_layers, n_heads)
        hits = prompt_metrics(model, batch, keep, ablated)["accuracy"].numpy()[:, correct]
        out.append(Population(zm.recipe.name, k, n_total, np.array(sets, dtype=np.int64), hits))
    return out


def cell(rng, pop: Population, top: int, n: int, draws: int) -> tuple[np.ndarray, np.ndarray]:
    """One page cell: ``n`` prompts (without replacement), TopK = set ``top``, ``draws`` RandomK
    sets from outside it (without replacement while the pool lasts)."""
    prompts = rng.choice(pop.hits.shape[1], size=n, replace=False)
    pool = pop.outside(top)
    chosen = rng.choice(pool, size=draws, replace=draws > len(pool))
    return pop.hits[top, prompts], pop.hits[chosen][:, prompts]


def candidates(pops: list[Population], n: int) -> dict:
    """Per bin of :data:`BINS`: the ``(population, set, true drop)`` whose true drop falls in
    it, from the populations with at least ``n`` correct prompts."""
    out = {b: [] for b in BINS}
    for p, pop in enumerate(pops):
        if pop.hits.shape[1] < n:
            continue
        for i, d in enumerate(pop.true_drops()):
            for lo, hi in BINS:
                if lo <= d < hi:
                    out[(lo, hi)].append((p, i, float(d)))
    return out


def run(pops: list[Population], n: int, draws: int, replicates: int, seed: int) -> list[dict]:
    """Rows like ``analysis.calibration``'s: ``zoo_null`` (FPR per rule) and ``zoo_power`` per
    bin with candidates (power per rule, ``effect`` the bin's lower edge, ``true_drop`` the mean
    of the TopK sets drawn), ``replicates`` cells each in families of ``calibration.FAMILY``."""
    rng = np.random.default_rng(seed)
    usable = [pop for pop in pops if pop.hits.shape[1] >= n]
    if not usable:
        return []

    def null_cell():
        pop = usable[rng.integers(len(usable))]
        prompts = rng.choice(pop.hits.shape[1], size=n, replace=False)
        chosen = rng.integers(len(pop.sets), size=draws + 1)
        sets = pop.hits[chosen][:, prompts]
        return (sets[0], sets[1:]), np.nan

    rows = _rows("zoo_null", n, draws, replicates, _count(null_cell, replicates))
    for (lo, hi), found in candidates(pops, n).items():
        if not found:
            continue

        def power_cell(found=found):
            p, i, d = found[rng.integers(len(found))]
            return cell(rng, pops[p], i, n, draws), d

        hits = _count(power_cell, replicates)
        rows += _rows("zoo_power", n, draws, replicates, hits, effect=(lo, min(hi, 1.0)))
    return rows


def _count(make, replicates: int) -> dict:
    """Positives per rule over ``replicates`` cells made by ``make`` (``((top, control),
    true_drop)``), decided in families; ``true_drop``: the mean of the cells' true drops."""
    hits = dict.fromkeys(cal.RULES, 0)
    drops, done = [], 0
    while done < replicates:
        made = [make() for _ in range(cal.FAMILY)]
        size = min(cal.FAMILY, replicates - done)
        for c in cal.family_calls([m[0] for m in made])[:size]:
            for r in cal.RULES:
                hits[r] += int(c[r])
        drops += [m[1] for m in made[:size]]
        done += size
    return hits | {"true_drop": float(np.nanmean(drops)) if not np.all(np.isnan(drops)) else None}


def _rows(kind, n, draws, replicates, hits, effect=None) -> list[dict]:
    """``calibration.rate_row`` per rule: a false-positive rate, or (``effect``: the bin's edges)
    a power with the bin's upper edge and the mean true drop of the TopK sets drawn."""
    if effect is None:
        return [cal.rate_row(r, kind, n, draws, replicates, hits[r]) for r in cal.RULES]
    extra = {"effect_high": effect[1], "true_drop": hits["true_drop"]}
    return [
        cal.rate_row(r, kind, n, draws, replicates, hits[r], effect[0], power=True) | extra
        for r in cal.RULES
    ]
