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
    AttributeOutput,
    heads_to_verify,
    needs_verification,
    record_verification,
    verify_stored,
)
from interp_heads.store import resume


def unswept_skills(splits: dict, fmts: dict, n_rank: int) -> list:
    """The skills of the run's CogQA files that it does not sweep, ``n_rank`` rows each (the
    probe's extra labels with ``probe_labels = "skills"``), in the file's format (added to
    ``fmts``)."""
    from interp_heads.tasks.cogqa import is_cogqa, read_cogqa

    sources = {r.source: n for n, (r, _) in splits.items() if r.source and is_cogqa(r.source)}
    others = {}
    for source, name in sources.items():
        for task in read_cogqa(source):
            if task.name not in splits and task.name not in others:
                fmts[task.name] = fmts[name]
                others[task.name] = task.subset(n=n_rank)
    return list(others.values())


def probe_settings(cfg):
    from interp_heads.attribution.probe import ProbeSettings

    return ProbeSettings(
        kind=str(cfg.probe_kind), epochs=cfg.probe_epochs, batch_size=cfg.probe_batch,
        lr=cfg.probe_lr, labels=str(cfg.probe_labels), importance=str(cfg.probe_importance),
        seed=cfg.seed,
    )  # fmt: skip


def probe_key(exp, splits, fmts, settings, names, others, evaluated) -> str:
    """The probe's resume key: every row it reads and its settings (the keys of before when the
    study's options are at their defaults, so that earlier runs keep their stored probe)."""
    from interp_heads.pipeline.baseline_step import rows_key

    cfg = exp.config
    keyed = [*(splits[n][0] for n in names), *others, *(evaluated or [])]
    extra = {"probe_rows": "evaluated"} if evaluated else {}
    extra |= {"probe_others": [o.name for o in others]} if others else {}
    if cfg.probe_position == "generated":
        extra["probe_new_tokens"] = cfg.max_new_tokens
    new = {"labels": "tasks", "importance": "mean_abs"}
    return resume.attribution_key(
        resume.model_fingerprint(exp.model),
        "|".join(f"{r.name}:{rows_key(exp.model, r, fmts[r.name])}" for r in keyed),
        method="probe",
        position=str(cfg.probe_position),
        probe={k: v for k, v in vars(settings).items() if new.get(k, ...) != v},
        batch_size=cfg.batch_size,
        fmts={n: fmts[n] for n in names},
        **extra,
    )


def probe_attribute_step(exp, inputs, record):
    """Train the probe on every task's rank split (or reuse it) and rank the heads per task; the
    prompt formats gain those of the other skills it was trained on (``unswept_skills``)."""
    from interp_heads.attribution.probe import probe_heads

    cfg, t, splits = exp.config, time.perf_counter(), inputs.splits
    fmts, rankings = dict(inputs.fmts), {}
    names = list(splits)
    ranks = [splits[n][0] for n in names]
    settings = probe_settings(cfg)
    others = unswept_skills(splits, fmts, cfg.n_rank) if settings.labels == "skills" else []
    evaluated = [splits[n][1] for n in names] if cfg.probe_rows == "evaluated" else None
    key = probe_key(exp, splits, fmts, settings, names, others, evaluated)
    stored = {n: load_stored(exp.folder.attribution_entry(n), key) for n in names}
    if any(s is None for s in stored.values()):
        stored = probe_heads(
            exp.model, ranks, fmts, position=str(cfg.probe_position), settings=settings,
            batch_size=cfg.batch_size, evaluated=evaluated, others=others,
            max_new_tokens=cfg.max_new_tokens,
        )  # fmt: skip
        for name, scores in stored.items():
            scores.provenance["resume_key"] = key
            scores.provenance.update(filter_correct=cfg.filter_correct)
            exp.folder.save_scores(name, scores)
    m = heads_to_verify(cfg)
    for name, rank in zip(names, ranks, strict=True):
        scores = stored[name]
        if needs_verification(scores, m):
            verify_stored(exp, name, rank, scores, m, fmts[name])
        rankings[name] = scores
        record_verification(exp, record, name, scores, m)
    record.note(probe=stored[names[0]].provenance["probe"])
    record.timings["probe/attribution"] = time.perf_counter() - t
    exp.folder.write_rankings(rankings)
    return AttributeOutput(rankings, fmts)
