"""The pipeline's attribution step for ``attribution = "probe"``: one probe over all tasks.

Every other method ranks each task alone; the probe learns to tell the tasks apart (the labels are
the tasks), so it is trained once on every task's rank split and yields one ranking per task
(``interp_heads.attribution.probe``). Its resume key covers all tasks' rows and the probe's
settings: a change to any task retrains it. The held-out accuracy and chance level go to the
manifest (``probe``) and the report.
"""

from __future__ import annotations

import time

from interp_heads.attribution.scores import load_stored
from interp_heads.pipeline.ranking_checks import (
    heads_to_verify,
    needs_verification,
    record_verification,
    verify_stored,
)
from interp_heads.store import resume


def probe_attribute_step(exp) -> dict:
    """Train the probe on every task's rank split (or reuse it) and rank the heads per task."""
    from interp_heads.attribution.probe import ProbeSettings, probe_heads
    from interp_heads.pipeline.baseline_step import rows_key

    cfg, t = exp.config, time.perf_counter()
    names = list(exp.splits)
    ranks = [exp.splits[n][0] for n in names]
    settings = ProbeSettings(kind=str(cfg.probe_kind), epochs=cfg.probe_epochs, seed=cfg.seed)
    key = resume.attribution_key(
        resume.model_fingerprint(exp.model),
        "|".join(
            f"{n}:{rows_key(exp.model, r, exp.fmts[n])}" for n, r in zip(names, ranks, strict=True)
        ),
        method="probe",
        position=str(cfg.probe_position),
        probe=vars(settings),
        batch_size=cfg.batch_size,
        fmts={n: exp.fmts[n] for n in names},
    )
    stored = {n: load_stored(exp.folder.attribution_entry(n), key) for n in names}
    if any(s is None for s in stored.values()):
        stored = probe_heads(
            exp.model,
            ranks,
            exp.fmts,
            position=str(cfg.probe_position),
            settings=settings,
            batch_size=cfg.batch_size,
        )
        for name, scores in stored.items():
            scores.provenance["resume_key"] = key
            scores.provenance.update(exp.provenance)
            exp.folder.save_scores(name, scores)
    m = heads_to_verify(cfg)
    for name, rank in zip(names, ranks, strict=True):
        scores = stored[name]
        if needs_verification(scores, m):
            verify_stored(exp, name, rank, scores, m)
        exp.rankings[name] = scores
        record_verification(exp, name, scores, m)
    exp.manifest["probe"] = stored[names[0]].provenance["probe"]
    exp.timings["probe/attribution"] = time.perf_counter() - t
    exp.folder.write_rankings(exp.rankings)
    return exp.rankings
