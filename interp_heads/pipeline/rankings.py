"""A stored ranking read back: its heads in order (``ablate --ranking``) and its provenance."""

from __future__ import annotations

import math
import os
from pathlib import Path

from interp_heads.config import validation
from interp_heads.errors import PipelineError
from interp_heads.model_info import source_of
from interp_heads.run.manifest import Manifest
from interp_heads.run.rankings import MAX_RANKING_BYTES, ranking_frame, stored_scores
from interp_heads.store.folder import RunFolder

__all__ = ["MAX_RANKING_BYTES", "load_ranking", "ranking_file", "stored_scores"]


def load_ranking(path: str, task: str, n_layers: int, n_heads: int) -> list[tuple[int, int]]:
    """Ordered heads from a run folder, ``ranking.csv`` or ``attribution.parquet``."""
    from interp_heads.heads import parse_heads

    p = ranking_file(path)
    validation.check_regular_file(p, f"ranking {str(p)!r}", MAX_RANKING_BYTES)
    frame = ranking_frame(p)  # never through a link, bounded (run.rankings)
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
    labels = list(frame["label"])
    if not labels or any(not isinstance(x, str) or not x.strip() for x in labels):
        raise PipelineError(
            f"ranking {str(p)!r} has {'no rows' if not labels else 'rows without a label'} (truncated?)"
        )
    if "rank" in frame.columns:
        frame = frame.assign(rank=_ranks(frame["rank"], f"ranking {str(p)!r}")).sort_values("rank")
    try:
        heads = parse_heads(list(frame["label"]), n_layers, n_heads)
    except ValueError as exc:
        raise PipelineError(f"ranking {str(p)!r}: {exc}") from None
    validation.check_unique_heads(heads, f"ranking {str(p)!r}")
    _check_labels_agree(frame, heads, f"ranking {str(p)!r}")
    return heads


def ranking_file(path: str) -> Path:
    """The file ``--ranking PATH`` names (a folder's ``ranking.csv``, else its
    ``attribution.parquet``); ``PipelineError`` saying what is expected when there is none, or
    when the file is a symbolic link (a run folder's files are read only when plain). Needs no
    model: the commands check it before the model loads."""
    p = Path(path)
    if p.is_dir():
        folder = RunFolder(p)
        there = [f for f in (folder.ranking_csv, folder.attribution_parquet) if os.path.lexists(f)]
        p = there[0] if there else folder.ranking_csv
        if not there:
            command = Manifest.from_dict(folder.read_manifest()).command
            what = f"an {command} run folder" if command else "a folder"
            raise PipelineError(
                f"ranking {str(path)!r} is {what} without ranking.csv or attribution.parquet; "
                "--ranking expects the folder 'interp-heads attribute --out DIR' (or 'run') "
                "wrote, or one of those files"
            )
    if p.is_symlink():
        raise PipelineError(
            f"ranking {str(p)!r} is a symbolic link; refused (only plain files are read: give "
            "the file it points to)"
        )
    if not p.exists():
        raise PipelineError(f"ranking {str(p)!r} not found")
    return p


def _ranks(column, source: str):
    """The ``rank`` column as whole numbers, each once (``PipelineError`` otherwise: the file's
    order or a tie would silently decide which heads are the top k)."""
    import pandas as pd

    ranks = pd.to_numeric(column, errors="coerce")
    bad = [v for v, r in zip(column, ranks, strict=True) if not math.isfinite(r) or r != int(r)]
    if bad:
        raise PipelineError(f"{source}: rank {str(bad[0])[:40]!r} is not a whole number")
    dup = ranks[ranks.duplicated()]
    if len(dup):
        raise PipelineError(f"{source}: rank {int(dup.iloc[0])} is given to two heads")
    return ranks.astype(int)


def _check_labels_agree(frame, heads, source: str) -> None:
    """Where the file has ``layer`` and ``head`` columns, each row's label must name that head."""
    import pandas as pd

    from interp_heads.heads import head_label

    if not {"layer", "head"} <= set(frame.columns):
        return
    layers = pd.to_numeric(frame["layer"], errors="coerce")
    cols = pd.to_numeric(frame["head"], errors="coerce")
    for (layer, head), lay, hd in zip(heads, layers, cols, strict=True):
        if (lay, hd) != (layer, head):
            raise PipelineError(
                f"{source}: label {head_label(layer, head)} disagrees with its row's layer "
                f"{_num(lay)} and head {_num(hd)}"
            )


def ranking_provenance(path: str, task: str) -> dict:
    """Provenance of a ranking (its examples, prompt format...) when the run folder holds it."""
    scores = stored_scores(path, task)
    return {} if scores is None else dict(scores.provenance)


def _num(value) -> str:
    return "?" if value != value else f"{value:g}"


# --------------------------------------------------------------------------- where a ranking came from
def ranking_source(path: str, task: str) -> dict:
    """What a stored ranking records of what it was made on: ``{"model": {spec, sha256, n_layers,
    n_heads} or None, "sha256": the task file's sha256 or None}``, from the ranking's own scores
    (``attribution/<task>.json``), else its run folder's ``manifest.json``; None when unrecorded
    (a ranking.csv written by hand or copied without its folder)."""
    p = Path(path)
    manifest = Manifest.from_dict(RunFolder(p if p.is_dir() else p.parent).read_manifest())
    scores = stored_scores(path, task)
    prov = dict(scores.provenance) if scores is not None else {}
    model = prov.get("model") if isinstance(prov.get("model"), dict) else None
    if model is not None:
        model = {**model, "n_layers": prov.get("n_layers"), "n_heads": prov.get("n_heads")}
    elif manifest.model is not None:  # a dict, as the field holds
        model = manifest.model
    data = manifest.data or {}
    entry = data.get(task) if isinstance(data.get(task), dict) else {}
    return {"model": model, "sha256": prov.get("task_sha256") or entry.get("sha256")}


def check_ranking_source(
    path: str,
    ranked_on: str,
    model,
    task,
    allow_other_model: bool = False,
    allow_other_task: bool = False,
) -> list[str]:
    """Refuse a ranking made on another model, or on another file of the same task.

    ``ranked_on``: the task of the ranking used; its file is compared with ``task``'s only when
    they are the same task (``--ranking-task`` names another task on purpose). The allow flags
    turn a refusal into a returned note (and a warning). Unrecorded sources are not refused.

    Raises:
        PipelineError: the ranking's model or task file differs and its flag is not given.
    """
    import warnings

    source = ranking_source(path, ranked_on)
    notes = []
    theirs = source["model"]
    if theirs is not None and not same_model(theirs, model):
        notes.append(
            f"ranking {str(path)!r} was made on model {_model_name(theirs)}, not on this "
            f"{_model_name(_model_record(model))}"
        )
        if not allow_other_model:
            raise PipelineError(notes[-1] + "; --allow-other-model masks its heads anyway")
    sha = source["sha256"]
    if ranked_on == task.name and sha and task.sha256 and sha != task.sha256:
        notes.append(
            f"ranking {str(path)!r} was made on another file of task {ranked_on!r} (sha256 "
            f"{sha[:12]}, this file's {task.sha256[:12]}): its rank examples are not this file's"
        )
        if not allow_other_task:
            raise PipelineError(notes[-1] + "; --allow-other-task uses it anyway")
    for note in notes:
        warnings.warn(note + " (allowed)", UserWarning, stacklevel=2)
    return notes


def _model_record(model) -> dict:
    src = source_of(model)
    return {**src, "n_layers": model.cfg.n_layers, "n_heads": model.cfg.n_heads}


def same_model(recorded: dict, model) -> bool:
    """Whether a ranking's recorded model is ``model``: the same weights hash when both have
    one, else the same spec and shape (an unrecorded spec is not held against it)."""
    mine = _model_record(model)
    shape = [recorded.get("n_layers"), recorded.get("n_heads")]
    if None not in shape and shape != [mine["n_layers"], mine["n_heads"]]:
        return False
    if recorded.get("sha256") and mine.get("sha256"):
        return recorded["sha256"] == mine["sha256"]
    return recorded.get("spec") in (None, mine.get("spec"))


def _model_name(record: dict) -> str:
    shape = f"{record.get('n_layers', '?')}x{record.get('n_heads', '?')} heads"
    return f"{str(record.get('spec') or '?')!r} ({shape})"
