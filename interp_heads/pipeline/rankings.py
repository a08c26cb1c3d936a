"""A stored ranking read back: its heads in order (``ablate --ranking``) and its provenance."""

from __future__ import annotations

from pathlib import Path

from interp_heads.config import validation
from interp_heads.errors import PipelineError, one_line
from interp_heads.store.folder import RunFolder


def load_ranking(path: str, task: str, n_layers: int, n_heads: int) -> list[tuple[int, int]]:
    """Ordered heads from a run folder, ``ranking.csv`` or ``attribution.parquet``."""
    import pandas as pd

    from interp_heads.heads import parse_heads

    p = Path(path)
    if p.is_dir():
        p = RunFolder(p).ranking_file()
    if not p.exists():
        raise PipelineError(f"ranking {str(p)!r} not found")
    try:
        frame = (
            pd.read_parquet(p) if p.suffix == ".parquet" else pd.read_csv(p, dtype={"label": str})
        )
    except Exception as exc:  # pandas/pyarrow raise many types for a damaged file
        msg = one_line(exc)
        raise PipelineError(
            f"ranking {str(p)!r} is not a readable {p.suffix.lstrip('.') or 'csv'} file ({msg})"
        ) from None
    if "label" not in frame.columns:
        raise PipelineError(f"ranking {str(p)!r} has no 'label' column")
    if "task" in frame.columns:
        made_on = [str(t) for t in dict.fromkeys(frame["task"])]
        if task not in made_on:
            raise PipelineError(
                f"ranking {str(p)!r} was made on task(s) {', '.join(map(repr, made_on))}, not "
                f"{task!r} (--ranking-task NAME uses another task's ranking)"
            )
        frame = frame[frame["task"] == task]
    if "rank" in frame.columns:
        frame = frame.sort_values("rank")
    labels = list(frame["label"])
    if not labels or any(not isinstance(x, str) for x in labels):
        raise PipelineError(
            f"ranking {str(p)!r} has {'no rows' if not labels else 'rows without a label'} (truncated?)"
        )
    try:
        heads = parse_heads(labels, n_layers, n_heads)
    except ValueError as exc:
        raise PipelineError(f"ranking {str(p)!r}: {exc}") from None
    validation.check_unique_heads(heads, f"ranking {str(p)!r}")
    return heads


def stored_scores(path: str, task: str):
    """The ``HeadScores`` of ``task`` stored beside a ranking (in its run folder), else None."""
    from interp_heads.attribution import HeadScores

    p = Path(path)
    root = p if p.is_dir() else p.parent
    folder = RunFolder(root)
    cands = [p] if p.suffix == ".parquet" else []
    for cand in cands + [folder.attribution_entry(task), folder.attribution_parquet]:
        if cand.exists():
            try:
                scores = HeadScores.load(cand)
            except (OSError, ValueError, KeyError):
                continue
            if scores.task == task:
                return scores
    return None


def ranking_provenance(path: str, task: str) -> dict:
    """Provenance of a ranking (its examples, prompt format...) when the run folder holds it."""
    scores = stored_scores(path, task)
    return {} if scores is None else dict(scores.provenance)


def ranking_elbow(path: str, task: str, scores, heads: list[tuple[int, int]]) -> int:
    """``k = "elbow"`` of the ranking of ``task`` at ``path``, read off ``scores`` (its
    :func:`stored_scores`), which must give its order.

    Raises:
        PipelineError: no scores are stored beside the ranking, or they rank the heads otherwise.
    """
    from interp_heads.sweep.elbow import elbow_k

    if scores is None:
        raise PipelineError(
            f"--elbow needs the ranking's scores: ranking {str(path)!r} has no attribution "
            f"scores of task {task!r} beside it (give the run folder or attribution.parquet)"
        )
    if [tuple(h) for h in scores.top(len(heads))] != [tuple(h) for h in heads]:
        raise PipelineError(
            f"--elbow: the scores stored beside ranking {str(path)!r} rank the heads in another "
            "order than the ranking itself (edited ranking.csv?)"
        )
    return elbow_k(scores)
