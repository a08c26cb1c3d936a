"""A stored ranking read back: the one reader of the rankings a run folder (or a ranking file
given with ``--ranking``) holds. ``Run.scores``/``Run.rankings``/``Run.ranked_heads`` read a
run folder's; :func:`ranking_frame` and :func:`stored_scores` read the file or folder a user
names (``pipeline.rankings`` checks what they return; ``studies.base.read_scores`` and the
report's head explorer read through ``Run``)."""

from __future__ import annotations

import io
from pathlib import Path

from interp_heads.errors import PipelineError, one_line
from interp_heads.store.csv_cells import csv_restore, parse_csv
from interp_heads.store.files import is_plain, read_plain
from interp_heads.store.folder import RunFolder

MAX_RANKING_BYTES = 64 * 2**20  # a ranking of a million heads is ~50 MB; more is not a ranking


def ranking_frame(p: Path):
    """The table of the ranking file ``p`` (``ranking.csv`` or a ``.parquet``), read as a plain
    file of bounded size (never through a link); ``PipelineError`` naming it when unreadable."""
    import pandas as pd

    data = read_plain(p, MAX_RANKING_BYTES)
    try:
        return (
            pd.read_parquet(io.BytesIO(data))
            if p.suffix == ".parquet"
            else csv_restore(parse_csv(data))
        )
    except Exception as exc:  # pandas/pyarrow raise many types for a damaged file
        msg = one_line(exc)
        raise PipelineError(
            f"ranking {str(p)!r} is not a readable {p.suffix.lstrip('.') or 'csv'} file ({msg})"
        ) from None


def stored_scores(path: str, task: str):
    """The ``HeadScores`` of ``task`` stored beside a ranking (in its run folder): a named
    ``.parquet`` file, else the folder's ``attribution/<task>.json``, else its
    ``attribution.parquet``; None when none is readable and of that task."""
    from interp_heads.attribution import HeadScores

    p = Path(path)
    root = p if p.is_dir() else p.parent
    folder = RunFolder(root)
    cands = [p] if p.suffix == ".parquet" else []
    for cand in cands + [folder.attribution_entry(task), folder.attribution_parquet]:
        if is_plain(cand):  # a link or a FIFO (whose read would block) is passed over
            try:
                if cand.suffix == ".json":
                    from interp_heads.run.folder import Run  # pandas: not at import

                    scores = Run.scores_entry(cand)
                else:  # a parquet table keeps its metric and provenance in its metadata
                    scores = HeadScores.load(cand)
            except (OSError, ValueError, KeyError):
                continue
            if scores is not None and scores.task == task:
                return scores
    return None
