"""The run's known-head table: previous-token, duplicate-token, induction and successor scores.

``known_step`` runs the detectors of :mod:`interp_heads.analysis.known_heads` once per run folder (one
forward pass on repeated random tokens, one on single ordinal tokens; a few seconds on SmolLM2;
``known_heads = false`` skips it),
stores them as a resume entry (``known_heads.json``, reused while the model and the detector
settings are the same) and as a tidy table (``known_heads.csv``: one row per kind and head, with
whether the head reaches the kind's threshold). The report marks those heads on each task's
heatmap and lists which of each task's TopK heads are of a known kind
(``report.which_heads.known_kinds_html``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import pandas as pd

from interp_heads.errors import one_line
from interp_heads.store import digest

# 8 sequences of 24 random tokens, each repeated: the settings of docs/heads.md (make heads)
N_SEQS, HALF, SEED = 8, 24, 0


def known_key(model_fp: dict, n_seqs: int, half: int, seed: int) -> str:
    """Resume key of the known-head entry: the model and the detector settings."""
    return digest(
        {"unit": "known_heads", "model": model_fp, "n_seqs": n_seqs, "half": half, "seed": seed}, 32
    )


def known_table(scores: dict) -> pd.DataFrame:
    """One row per kind and head: kind, layer, head, label, score, threshold, is_kind."""
    from interp_heads.analysis.known_heads import THRESHOLDS

    frames = []
    for kind, s in scores.items():
        f = s.to_frame("signed")[["layer", "head", "label", "score", "rank"]]
        frames.append(
            f.assign(kind=kind, threshold=THRESHOLDS[kind], is_kind=f.score >= THRESHOLDS[kind])
        )
    cols = ["kind", "layer", "head", "label", "score", "rank", "threshold", "is_kind"]
    return pd.concat(frames, ignore_index=True)[cols]


@dataclass(frozen=True)
class KnownOutput:
    """The known-head table (``known_heads.csv``; None: skipped)."""

    known_table: pd.DataFrame | None


def known_step(exp, inputs, record) -> KnownOutput:
    """Known-head scores of the run's model (stored once, reused while the key matches); skipped
    with ``known_heads = false`` (``--no-known-heads``), shown with a progress bar otherwise."""
    from interp_heads.analysis.known_heads import known_head_scores
    from interp_heads.attribution import HeadScores
    from interp_heads.pipeline.state import progress_bar
    from interp_heads.store import resume

    if not getattr(exp.config, "known_heads", True):
        record.note(known_heads={"skipped": "off (known_heads = false)"})
        return KnownOutput(None)
    start = time.perf_counter()
    model, folder = exp.model, exp.folder
    half = min(HALF, (model.cfg.n_ctx - 1) // 2)
    key = known_key(resume.model_fingerprint(model), N_SEQS, half, SEED)
    entry = folder.read_known()
    if entry is not None and entry.get("key") == key:
        scores = {k: HeadScores.from_dict(v) for k, v in entry["scores"].items()}
    else:
        try:
            with progress_bar(1 + model.cfg.n_layers, "known heads", exp.invocation.quiet) as bar:
                scores = known_head_scores(model, N_SEQS, half, SEED, progress=bar.update)
        except (ValueError, RuntimeError, AttributeError) as exc:  # e.g. a model without tokenizer
            record.note(known_heads={"skipped": one_line(exc)})
            return KnownOutput(None)
        folder.write_known({"key": key, "scores": {k: s.to_dict() for k, s in scores.items()}})
    table = known_table(scores)
    folder.write_frame(folder.known_csv, table)
    record.note(
        known_heads={
            kind: grp.loc[grp.is_kind, "label"].tolist() for kind, grp in table.groupby("kind")
        }
    )
    record.timings["known"] = time.perf_counter() - start
    return KnownOutput(table)
