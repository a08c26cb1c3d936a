"""Exact tests, intervals and power for the sweep's cells (``sweep.stats`` uses them).

- :func:`wilson_interval`: the Wilson score interval of a proportion. 0 correct of 48 gets
  [0, 0.074] (a percentile bootstrap over 48 zeros gets [0, 0]: it cannot see what it never drew).
- :func:`sign_flip_p`: the exact two-sided paired sign-flip (permutation) test of per-example
  differences. Under the null each example's difference is as likely to have either sign, so
  ``p = P(|sum_i s_i d_i| >= |sum_i d_i|)`` over the ``2 ** n`` equally likely sign vectors ``s``
  (zero differences drop out: their sign changes nothing). It is computed exactly: by counting
  subset sums when the differences are multiples of a common unit (a 0/1 metric averaged over
  ``d`` draws: multiples of ``1 / d``), else by enumerating the sign vectors (up to 16 non-zero
  differences), else by a seeded Monte Carlo over 200,000 sign vectors, ``(1 + hits) / (1 + N)``
  (standard error under 0.0011; the only case that is not exact). With ``n`` non-zero
  differences no p below ``2 ** (1 - n)`` is possible.
- :func:`holm`: Holm's step-down adjustment of a family of p-values (family-wise error rate).
- :func:`min_detectable`: the smallest mean paired difference the cell detects with 80% power
  at the 5% level, ``max(c * s / sqrt(n), c**2 / (n + c**2))`` with ``c = z(0.975) + z(0.80) =
  2.80``: the first term is the normal-approximation detectable shift of a paired mean with the
  observed standard deviation ``s`` of the ``n`` per-example differences; the second, for a
  metric in [0, 1], is the shift ``delta`` a design of ``n`` examples detects when ``delta`` of
  them move by the metric's whole range (variance ``delta * (1 - delta)``; solve
  ``delta = c * sqrt(delta * (1 - delta) / n)``), so a cell whose differences happen not to vary
  does not claim to see every difference. The draws' spread is not in it (the interval has it).
"""

from __future__ import annotations

import itertools
from statistics import NormalDist  # the standard library's: scipy is not in every environment

import numpy as np

MONTE_CARLO_FLIPS = 200_000
ENUMERATE_UP_TO = 16  # non-zero differences enumerated exactly when not on a common unit
_UNITS = range(1, 61)  # 1 / m grids tried for the exact subset-sum count
_MAX_TOTAL = 200_000  # largest sum of scaled magnitudes counted exactly


def is_proportion(values: np.ndarray) -> bool:
    """Whether every value is 0 or 1 (a cell whose mean is a proportion)."""
    v = np.asarray(values, dtype=float)
    return v.size > 0 and bool(np.isin(v, (0.0, 1.0)).all())


def wilson_interval(p_hat: float, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``p_hat`` observed on ``n`` trials."""
    if n <= 0:
        return float("nan"), float("nan")
    z = NormalDist().inv_cdf(1 - alpha / 2)
    denom = 1 + z * z / n
    center = (p_hat + z * z / (2 * n)) / denom
    half = z / denom * np.sqrt(max(p_hat * (1 - p_hat), 0.0) / n + z * z / (4 * n * n))
    lo = 0.0 if p_hat <= 0 else max(0.0, center - half)  # exact ends, no rounding noise
    hi = 1.0 if p_hat >= 1 else min(1.0, center + half)
    return float(lo), float(hi)


def sign_flip_p(diffs: np.ndarray, seed: int = 0) -> float:
    """Two-sided p of the paired sign-flip test of ``diffs`` (see the module docstring)."""
    d = np.asarray(diffs, dtype=float)
    d = d[np.abs(d) > 1e-12]
    if d.size == 0:
        return 1.0
    scaled = _on_a_unit(np.abs(d))
    if scaled is not None:
        return _subset_sum_p(scaled, int(round(float(np.sum(scaled[d > 0])))))
    observed = abs(float(d.sum())) - 1e-9 * float(np.abs(d).sum())
    if d.size <= ENUMERATE_UP_TO:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=d.size)))
        return float((np.abs(signs @ d) >= observed).mean())
    rng = np.random.default_rng(seed)
    hits = sum(
        int((np.abs(rng.choice((1.0, -1.0), size=(n, d.size)) @ d) >= observed).sum())
        for n in _chunks(MONTE_CARLO_FLIPS, 20_000)
    )
    return (1 + hits) / (1 + MONTE_CARLO_FLIPS)


def _chunks(total: int, size: int):
    while total > 0:
        yield min(size, total)
        total -= size


def _on_a_unit(mags: np.ndarray) -> np.ndarray | None:
    """``mags * m`` as integers for the smallest ``m`` that makes them whole, or None."""
    for m in _UNITS:
        scaled = mags * m
        whole = np.round(scaled)
        if (
            np.allclose(scaled, whole, atol=1e-9)
            and (whole > 0).all()
            and whole.sum() <= _MAX_TOTAL
        ):
            return whole.astype(np.int64)
    return None


def _subset_sum_p(mags: np.ndarray, positive: int) -> float:
    """``P(|2X - A| >= |2 * positive - A|)`` for ``X`` the sum of a uniformly random subset of
    the integer magnitudes ``mags`` (``A`` their total): the sign-flip test on a unit grid."""
    total = int(mags.sum())
    dist = np.zeros(total + 1)
    dist[0] = 1.0
    for a in mags.tolist():
        dist[a:] = 0.5 * dist[a:] + 0.5 * dist[: total + 1 - a].copy()
        dist[:a] *= 0.5
    x = np.arange(total + 1)
    return float(min(1.0, dist[np.abs(2 * x - total) >= abs(2 * positive - total)].sum()))


def holm(pvalues) -> np.ndarray:
    """Holm-adjusted p-values, in the input order; NaN stays NaN and is not counted."""
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    idx = np.flatnonzero(~np.isnan(p))
    order = idx[np.argsort(p[idx], kind="stable")]
    m, running = len(order), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def min_detectable(
    diffs: np.ndarray, unit_range: bool, alpha: float = 0.05, power: float = 0.8
) -> float:
    """The smallest mean paired difference detectable at ``power`` (module docstring formula);
    ``unit_range``: the metric lies in [0, 1], so the design floor applies."""
    d = np.asarray(diffs, dtype=float)
    n = d.size
    if n < 2:
        return float("nan")
    c = NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)
    shift = c * float(np.std(d, ddof=1)) / np.sqrt(n)
    return max(shift, c * c / (n + c * c)) if unit_range else shift
