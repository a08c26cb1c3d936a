"""The test every verdict uses: TopK against a random control, with the random draws a random
factor, and the interval that inverts that test (so the two never disagree).

One cell holds ``top[example]`` (TopK, one deterministic head set) and ``control[draw, example]``
(RandomK's draws), both over the same examples. The null a verdict must reject is "TopK is no
different from another random draw of k heads". Two sources of noise could fake a difference:

- **examples** (which prompts were asked): the exact paired sign-flip test of the per-example
  differences ``top[e] - mean_j control[j, e]`` (``inference.sign_flip_p``);
- **draws** (which random heads were drawn; heavy-tailed: a draw that holds one critical head can
  fall to 0.13 where the others hold 0.7). The test is the prediction test of one more draw: under
  the null TopK's mean is one more draw mean, so ``t = (mean(top) - mean(m)) / (s * sqrt(1 + 1/D))``
  over the ``D`` draw means ``m`` (standard deviation ``s``) has Student's t law with ``D - 1``
  degrees of freedom (the draws are exchangeable units; their means over the shared examples carry
  the draw and draw-by-example variance, which is what another draw would differ by).

The cell's p is the larger of the two (an intersection-union test, Berger 1982: it rejects only
when both do, so it holds its level under either null). A permutation over the draws alone (TopK
relabelled among the ``D + 1`` sets) would be exact, but cannot go below ``1 / (D + 1)`` (0.17 at
5 draws); the t law is what 5 draws allow, and the calibration (``analysis.calibration``) measures
its false-positive rate on heavy-tailed draws instead of assuming it. A sign flip over examples
that also relabels a draw as TopK does not test the draw factor: flipping an example's sign turns
a draw's consistent offset ``delta`` over ``n`` examples into spread ``sqrt(n) * delta``, not
``n * delta``.

For a proportion (every score 0 or 1) a third test joins: the Bonferroni box of two exact
Clopper-Pearson intervals, TopK's over its ``n`` examples and RandomK's over the same ``n``
examples (its per-example means summed: the examples are the independent unit; the draws share
them). It is what keeps 0 of 48 against 0 of 48 from the point interval ``[0, 0]``: the
sign-flip test of ``n`` equal differences rejects every shift but 0.

The interval is the set of shifts ``delta`` no test rejects: ``max(p_examples(d - delta),
p_draws(delta), p_box(delta)) >= alpha``, i.e. the hull of the three acceptance sets (each holds the
observed difference, so their union is one interval). The shifted sign-flip test is evaluated
exactly on a grid of ``1 / (unit * GRID)`` when the differences are multiples of ``1 / unit``
(a 0/1 metric over ``D`` draws: ``unit = D``) and the interval rounds outward to that grid; other
metrics use a fixed set of ``MC_SIGNS`` random sign vectors. The reported p is the same ``max`` at
``delta = 0``, so 0 lies in the interval exactly when ``p >= alpha``.
"""

from __future__ import annotations

import numpy as np

from interp_heads.sweep import inference

GRID = 20  # grid steps per unit of the differences for the exact shifted test
MC_SIGNS = 20_000  # sign vectors of the shifted test when the differences are on no unit


def clopper_pearson(x: float | int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """The exact (Clopper-Pearson) interval of a proportion: ``x`` successes of ``n`` trials
    (``x`` may be a sum of per-example means: the beta quantiles take any real ``x``)."""
    from scipy.special import betaincinv  # the beta quantile (scipy.stats.beta.ppf, faster)

    if n <= 0:
        return float("nan"), float("nan")
    lo = 0.0 if x <= 0 else float(betaincinv(x, n - x + 1, alpha / 2))
    hi = 1.0 if x >= n else float(betaincinv(x + 1, n - x, 1 - alpha / 2))
    return lo, hi


def draws_p(top: np.ndarray, control: np.ndarray, delta: float = 0.0) -> float:
    """Two-sided p of the prediction test of one more draw (module docstring) for the shift
    ``delta`` of TopK over RandomK; NaN with fewer than 2 draws."""
    from scipy.special import stdtr  # Student's t distribution function

    means = np.asarray(control, dtype=float).mean(axis=1)
    n_draws = means.size
    if n_draws < 2:
        return float("nan")
    gap = float(np.mean(top)) - float(means.mean()) - delta
    s = float(np.std(means, ddof=1)) * np.sqrt(1 + 1 / n_draws)
    if s <= 1e-12:
        return 1.0 if abs(gap) <= 1e-12 else 0.0
    return float(2 * stdtr(n_draws - 1, -abs(gap) / s))


def _box(top, control, alpha):
    n = top.size
    t_lo, t_hi = clopper_pearson(float(top.sum()), n, alpha / 2)
    c_lo, c_hi = clopper_pearson(float(control.mean(axis=0).sum()), n, alpha / 2)
    return t_lo - c_hi, t_hi - c_lo


def box_p(top: np.ndarray, control: np.ndarray, delta: float = 0.0) -> float:
    """The largest level at which the Bonferroni Clopper-Pearson box still holds ``delta`` (the
    box shrinks as the level grows; bisection on its logarithm)."""
    if _inside(top, control, 1.0, delta):
        return 1.0
    inside, outside = 1e-15, 1.0
    if not _inside(top, control, inside, delta):
        return 0.0
    for _ in range(40):
        mid = float(np.sqrt(inside * outside))
        inside, outside = (mid, outside) if _inside(top, control, mid, delta) else (inside, mid)
    return inside


def _inside(top, control, alpha, delta) -> bool:
    lo, hi = _box(top, control, alpha)
    return lo <= delta <= hi


class _Shifted:
    """The sign-flip p of ``d - delta``, exact on a grid when ``d`` is on a unit, else on a fixed
    set of random sign vectors (the same vectors for every ``delta``)."""

    def __init__(self, d: np.ndarray, seed: int = 0):
        self.d = np.asarray(d, dtype=float)
        unit = _unit(self.d)
        self.step = None if unit is None else 1.0 / (unit * GRID)
        if self.step is None:
            rng = np.random.default_rng(seed)
            self.signs = rng.choice((1.0, -1.0), size=(MC_SIGNS, self.d.size))

    def p(self, delta: float) -> float:
        x = self.d - delta
        if self.step is not None:
            ints = np.round(x / self.step).astype(np.int64)
            ints = ints[ints != 0]
            if ints.size == 0:
                return 1.0
            return inference._subset_sum_p(np.abs(ints), int(ints[ints > 0].sum()))
        x = x[np.abs(x) > 1e-12]
        if x.size == 0:
            return 1.0
        observed = abs(float(x.sum())) - 1e-9 * float(np.abs(x).sum())
        nz = np.abs(self.d - delta) > 1e-12
        return float((1 + (np.abs(self.signs[:, nz] @ x) >= observed).sum()) / (1 + MC_SIGNS))

    def snap(self, delta: float) -> float:
        return delta if self.step is None else round(delta / self.step) * self.step


def _unit(d: np.ndarray) -> int | None:
    for m in range(1, 61):
        if np.allclose(d * m, np.round(d * m), atol=1e-9):
            return m
    return None


def _edge(accept, inside: float, outside: float, shifted: _Shifted, iters: int = 40) -> float:
    """The last accepted shift between ``inside`` (accepted) and ``outside`` (bisection, on the
    shifted test's grid when it has one)."""
    if accept(outside):
        return outside
    for _ in range(iters):
        mid = shifted.snap((inside + outside) / 2)
        if mid in (inside, outside):
            break
        inside, outside = (mid, outside) if accept(mid) else (inside, mid)
    return inside


def paired_test(
    top: np.ndarray,
    control: np.ndarray,
    alpha: float = 0.05,
    proportion: bool | None = None,
    interval: bool = True,
) -> dict:
    """TopK against the control's draws: ``p`` (module docstring), its parts ``p_examples``,
    ``p_draws`` (NaN below 2 draws: then it takes no part) and ``p_box`` (proportions only), and
    the interval ``diff_low``, ``diff_high`` that inverts the same test at ``alpha``."""
    from scipy.special import stdtrit  # Student's t quantile

    top = np.asarray(top, dtype=float)
    control = np.asarray(control, dtype=float)
    if proportion is None:
        proportion = inference.is_proportion(top) and inference.is_proportion(control)
    d = top - control.mean(axis=0)
    diff = float(d.mean())
    shifted = _Shifted(d)
    n_draws = control.shape[0]
    pe = shifted.p(0.0)
    pd_ = draws_p(top, control) if n_draws >= 2 else float("nan")
    pb = box_p(top, control) if proportion else float("nan")
    p = float(np.nanmax([pe, pd_, pb]))
    parts = {"p_value": p, "p_examples": float(pe), "p_draws": float(pd_), "p_box": float(pb)}
    if not interval:  # the calibration's replicates need only the p
        return {"diff": diff, **parts}
    # the union of the three acceptance sets; each holds ``diff``
    unit = proportion or bool((np.abs(d) <= 1).all())
    span = 2.0 if unit else 2 * float(np.abs(d).max()) + 1
    center = shifted.snap(diff)
    accept = lambda x: shifted.p(x) >= alpha  # noqa: E731
    if accept(center):
        lo = _edge(accept, center, center - span, shifted)
        hi = _edge(accept, center, center + span, shifted)
    else:
        lo = hi = diff
    if n_draws >= 2:
        means = control.mean(axis=1)
        half = float(
            stdtrit(n_draws - 1, 1 - alpha / 2) * np.std(means, ddof=1) * np.sqrt(1 + 1 / n_draws)
        )
        lo, hi = min(lo, diff - half), max(hi, diff + half)
    if proportion:
        b_lo, b_hi = _box(top, control, alpha)
        lo, hi = min(lo, b_lo), max(hi, b_hi)
    if unit:  # a difference of two [0, 1] metrics lies in [-1, 1]
        lo, hi = max(lo, -1.0), min(hi, 1.0)
    eps = shifted.step or 1e-9  # one interval with its p: 0 inside exactly when p >= alpha
    if p >= alpha:
        lo, hi = min(lo, 0.0), max(hi, 0.0)
    elif lo <= 0 <= hi:
        lo, hi = (lo, min(hi, -eps)) if diff < 0 else (max(lo, eps), hi)
    return {
        "diff": diff,
        "diff_low": float(lo),
        "diff_high": float(hi),
        **parts,
    }
