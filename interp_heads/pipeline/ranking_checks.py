"""The pipeline's check of each ranking against the exact effect of the sweep's intervention.

``attribute_step`` asks :func:`heads_to_verify` how many heads to check, lets ``attribute_heads`` verify a
ranking it computes, verifies a ranking reused from the run folder that lacks a verification of
that size (:func:`verify_stored`), and records every verdict in the manifest, warning when a
ranking is flagged (:func:`record_verification`). The check itself is
``interp_heads.attribution.verify``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

from interp_heads.tasks.schema import Task


@dataclass(frozen=True)
class AttributeOutput:
    """What the attribute step returns (``pipeline.steps.attribute_step``, and for the probe
    ``pipeline.probe_step``): every task's ranking (``HeadScores``) and the prompt formats (the
    probe's other skills added; else as the plan resolved them)."""

    rankings: dict
    fmts: dict[str, str]


def heads_to_verify(cfg) -> int:
    """Heads to verify: ``cfg.verify``, or 0 when the sweep's ablation is not the mean (the
    verification measures exact mean ablation)."""
    from interp_heads.interventions.kinds.mean import Mean

    return cfg.verify if str(cfg.ablation) == Mean.name else 0


def needs_verification(scores, m: int) -> bool:
    """Whether a stored ranking lacks a verification of ``m`` heads."""
    return bool(m) and (scores.provenance.get("verification") or {}).get("m") != m


def verify_stored(exp, name: str, rank: Task, scores, m: int, fmt: str) -> None:
    """Verify a ranking reused from the folder (made before, or with another ``verify``); re-save it."""
    from interp_heads.attribution import make_batches, verify_ranking

    batches = make_batches(
        exp.model,
        rank,
        batch_size=int(scores.provenance.get("batch_size") or exp.config.batch_size),
        fmt=fmt,
        corrupted=False,
    )
    scores.provenance["verification"] = verify_ranking(exp.model, batches, scores, m)
    exp.folder.save_scores(name, scores)


def record_verification(exp, record, name: str, scores, m: int) -> None:
    """The verdict in the manifest (``record``: the run's ``RunRecord``); a warning when the ranking agrees poorly with the exact effect."""
    from interp_heads.attribution.verify import VerificationWarning

    checks = dict(record.manifest.verification or {})
    if not m:
        off = not exp.config.verify
        checks[name] = {"skipped": "off (verify = 0)" if off else "needs ablation = 'mean'"}
        record.note(verification=checks)
        return
    v = scores.provenance["verification"]
    keep = ("m", "top_confirmed", "spearman_sample", "spearman", "flag", "verdict", "measured")
    checks[name] = {k: v.get(k) for k in keep}
    record.note(verification=checks)
    if v.get("flag"):
        warnings.warn(
            f"task {name!r}: the {scores.method} ranking agrees poorly with exact mean ablation: "
            f"{v['verdict']}",
            VerificationWarning,
            stacklevel=3,
        )
