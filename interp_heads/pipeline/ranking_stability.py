"""The pipeline's split-half stability of each ranking: recorded with the ranking and in the manifest.

``attribute_heads`` stores the two halves of every ranking it makes (``provenance["split_half"]``,
from its per-example scores: no extra forward pass). ``attribute_step`` calls
:func:`record_stability`, which compares the halves at the run's k values (``attribute``: the
default k values of :mod:`interp_heads.attribution.stability`), writes the result to the ranking's
``provenance["stability"]`` and the manifest's ``stability`` entry, and warns when the top k of a
ranking is unstable. A ranking reused from the run folder that was stored without halves gets them
from one recomputation of the same attribution (:func:`halves_for_stored`).
"""

from __future__ import annotations

import warnings

from interp_heads.attribution.stability import DEFAULT_KS, stability_of


class StabilityWarning(UserWarning):
    """The top k of a ranking depends on which rank examples made it."""


def run_ks(ks: list[int]) -> list[int]:
    """The k values stability is measured at: the run's, else the defaults."""
    return [int(k) for k in (ks or DEFAULT_KS)]


def halves_for_stored(exp, rank, scores, attribute_kw: dict) -> bool:
    """Give a stored ranking without halves the halves of a fresh run of the same attribution;
    whether the ranking changed (and must be saved again)."""
    if "split_half" in scores.provenance:
        return False
    from interp_heads.attribution import attribute_heads

    fresh = attribute_heads(exp.model, rank, **attribute_kw)
    scores.provenance["split_half"] = fresh.provenance["split_half"]
    return True


def record_stability(record, name: str, scores, ks: list[int]) -> bool:
    """Split-half agreement of ``scores`` at the run's k values (``ks``) into the ranking's provenance and the
    manifest (``record``: the run's ``RunRecord``), a warning when unstable (none when the halves are too small to decide); whether the
    provenance changed."""
    result = stability_of(scores, run_ks(ks))
    record.manifest = record.manifest.with_updates(
        stability={**(record.manifest.stability or {}), name: result}
    )
    changed = scores.provenance.get("stability") != result
    scores.provenance["stability"] = result
    if result.get("unstable") and not result.get("too_few"):
        ks = ", ".join(map(str, result["unstable"]))
        share = ", ".join(f"{result['shared'][str(k)]} of {k}" for k in result["unstable"])
        warnings.warn(
            f"task {name!r}: the top k of the {scores.method} ranking is unstable at k = {ks}: two "
            f"halves of its {result['n_examples']} rank examples share {share} heads",
            StabilityWarning,
            stacklevel=3,
        )
    return changed
