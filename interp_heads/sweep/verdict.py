"""The one verdict every page gives on TopK against RandomK ("does TopK collapse the task?"), and
its measured error rates.

The rule (:data:`RULE`): **yes** when TopK lies below RandomK with the Holm-adjusted p of
``sweep.exact.paired_test`` (examples and RandomK draws both random factors) under
:data:`ALPHA`, the family being the page's cells. Otherwise **no**, unless the cell cannot be
decided:

- ``undecided: <reason>``: the caller knows the cell cannot show a drop (the metric cannot score
  the answer format; the unmasked score is below a floor, so nothing can drop). Such a cell is
  never "no", never a page's headline, never a flip;
- ``undecided (n = 7; 10 needed)`` / ``undecided (3 random draws; 5 needed)``: below the page's
  minimum examples or draws (``sweep.stats.too_few``);
- ``no data``: the cell has no test.

The seed claim's drop ratio (TopK's drop at least 3x RandomK's) no longer decides: on a cell whose
unmasked score is 1.00 and TopK 0.00 it reduces to "RandomK >= 0.667", a threshold inside
RandomK's own noise. It is shown beside the verdict as a secondary reading (:func:`ratio_reading`),
with its false-positive rate measured by the same calibration.

:func:`error_rates` reads the rule's measured false-positive rate and power at the cell's n from
the committed calibration (``docs/calibration.json``, written by ``analysis.calibration``), so
every verdict row can say how often its rule is wrong.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import SupportsFloat, SupportsInt

import numpy as np
import pandas as pd

from interp_heads.sweep import stats
from interp_heads.sweep.inference import holm

ALPHA = 0.05
RULE = "holm_exact"  # the calibration's name for the rule below
RATIO_RULE = "ratio_3x"  # the seed claim's rule, kept as a secondary reading
CLAIM_RATIO = 3.0  # TopK's drop at least this many times RandomK's (the seed claim)
POWER_WORDS = {
    "power": "",
    "power_light": " (draws without a heavy tail)",
    "zoo_power": " on trained models (zoo.planted_power)",
}
CALIBRATION = Path(__file__).resolve().parents[2] / "docs" / "calibration.json"


def collapse(
    diff: float,
    p_holm: float,
    n_examples: SupportsInt,
    n_draws: SupportsInt,
    *,
    undecided: str | None = None,
    min_examples: int = stats.MIN_EXAMPLES,
) -> str:
    """``yes`` / ``no`` / ``undecided ...`` / ``no data`` for one cell (module docstring).
    ``diff``: TopK minus RandomK; ``p_holm``: the cell's Holm-adjusted p over the page's family;
    ``undecided``: why the caller knows the cell cannot be decided (None: it can)."""
    if undecided:
        return f"undecided: {undecided}"
    if diff != diff or p_holm != p_holm:
        return "no data"
    why = stats.too_few(n_examples, n_draws, min_examples)
    if why:
        return why
    return "yes" if p_holm < ALPHA and diff < 0 else "no"


def is_yes(verdict: str) -> bool:
    """A decided yes."""
    return verdict == "yes"


def is_decided(verdict: str) -> bool:
    """A yes or a no (not undecided, not without data)."""
    return verdict in ("yes", "no")


def decide(
    frame: pd.DataFrame,
    *,
    diff: str = "diff",
    p: str = "p_value",
    n: str = "n_examples",
    draws: str = "n_draws",
    min_examples: int = stats.MIN_EXAMPLES,
    out: str = "collapses",
) -> pd.DataFrame:
    """``frame`` with ``p_holm`` (Holm over its rows with a p: the page's family) and the verdict
    column ``out``. An ``undecided`` column (text; empty or NaN: none) passes its reasons to
    :func:`collapse`; undecided cells stay in the family (their p, when they have one, counts)."""
    if frame.empty:
        return frame.assign(p_holm=pd.Series(dtype=float), **{out: pd.Series(dtype=str)})
    adj = holm(frame[p].to_numpy(float))
    why = frame["undecided"] if "undecided" in frame else pd.Series([None] * len(frame))
    verdicts = [
        collapse(
            float(d), float(a), int(k), int(m), undecided=_reason(u), min_examples=min_examples
        )
        for d, a, k, m, u in zip(frame[diff], adj, frame[n], frame[draws], why, strict=True)
    ]
    return frame.assign(p_holm=adj, **{out: verdicts})


def _reason(u) -> str | None:
    return u if isinstance(u, str) and u.strip() else None


def ratio_reading(top_drop: float, control_drop: float) -> str:
    """The seed claim's 3x ratio as a secondary reading: ``"3x: yes"`` / ``"3x: no"``."""
    if top_drop != top_drop or control_drop != control_drop:
        return ""
    ok = control_drop <= 0 < top_drop or (
        control_drop > 0 and top_drop / control_drop >= CLAIM_RATIO
    )
    return f"{CLAIM_RATIO:g}x: {'yes' if ok else 'no'}"


MAX_CALIBRATION = 16 * 2**20  # the committed calibration is a few kB; a larger file is not one


def load_calibration(path: Path | None = None) -> dict | None:
    """The committed calibration (``analysis.calibration``'s JSON), or None when absent or not a
    JSON object. Read as the store reads back a run's files (``store.files.read_plain``): a plain file of
    at most :data:`MAX_CALIBRATION` bytes, so a link is not followed and a FIFO or device is
    refused at once (``UnsafeFile``, one line) instead of blocking the page."""
    from interp_heads.store.files import read_plain

    path = path or CALIBRATION
    try:
        raw = read_plain(path, MAX_CALIBRATION)
    except FileNotFoundError:
        return None
    try:
        data = json.loads(raw.decode("utf-8"))
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def error_rates(
    n_examples: SupportsFloat,
    n_draws: SupportsInt,
    rule: str = RULE,
    calibration: dict | None = None,
) -> str:
    """``"FPR 0.03 [0.01, 0.06]; power 0.41 / 0.93 at drop 0.3 / 0.6 (calibrated at n = 24, 5
    draws)"``: the rule's worst measured false-positive rate over the null kinds and its power,
    at the calibrated n nearest below the cell's (the nearest above when none is below);
    ``"not calibrated"`` without a calibration row for the rule and draws."""
    cal = calibration if calibration is not None else load_calibration()
    rows = [r for r in (cal or {}).get("rows", []) if r["rule"] == rule]
    rows = [r for r in rows if int(r["draws"]) == int(n_draws)] or []
    if not rows or n_examples != n_examples:
        return "not calibrated"
    ns = sorted({int(r["n"]) for r in rows})
    below = [m for m in ns if m <= int(n_examples)]
    at = below[-1] if below else ns[0]
    nulls = [r for r in rows if int(r["n"]) == at and "fpr" in r]
    text = ""
    if nulls:
        worst = max(nulls, key=lambda r: r["fpr"])
        text = f"FPR {worst['fpr']:.2f} [{worst['fpr_low']:.2f}, {worst['fpr_high']:.2f}]"
    for kind, words in POWER_WORDS.items():
        power = sorted(
            (r for r in rows if int(r["n"]) == at and r["kind"] == kind), key=lambda r: r["effect"]
        )
        if power:
            text += (
                f"; power{words} "
                + " / ".join(f"{r['power']:.2f}" for r in power)
                + (" at true drop " if kind == "zoo_power" else " at drop ")
                + " / ".join(_effect(r) for r in power)
            )
    return f"{text} (calibrated at n = {at}, {int(n_draws)} draws)" if text else "not calibrated"


def _effect(row: dict) -> str:
    """A power row's planted drop, or its bin of true drops (``effect`` to ``effect_high``)."""
    if "effect_high" in row:
        return f"{row['effect']:g}-{row['effect_high']:g}"
    return f"{row['effect']:g}"


def error_rates_column(frame: pd.DataFrame, n: str = "n_examples", draws: str = "n_draws") -> list:
    """:func:`error_rates` per row of ``frame`` (one read of the calibration)."""
    cal = load_calibration()
    return [
        error_rates(int(k) if k == k else np.nan, int(m) if m == m else 0, calibration=cal)
        for k, m in zip(frame[n], frame[draws], strict=True)
    ]
