"""``interp-heads score RUN --metrics comet``: score a run folder's stored generations afterwards.

A run made in the tl4 environment (TransformerLens 4, transformers 5) cannot load COMET, which
pins transformers < 5; its ``generations.jsonl`` holds every condition's answers with their
question and reference, so COMET (or any answer metric) is computed from the default environment
without the model. Scores are written to ``RUN/scores/<metric>.csv`` (one row per condition and
example, the columns of ``sweep.parquet``) and their means per condition are printed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from interp_heads.errors import PipelineError
from interp_heads.store import releases_locks
from interp_heads.store.files import read_plain
from interp_heads.store.folder import RunFolder

KEYS = ["task", "selection", "seed", "k"]
SCORE_COMMAND = "interp-heads score RUN --metrics comet"


def read_generations(run_dir: Path) -> pd.DataFrame:
    """The run's stored generations, one row per condition and example."""
    path = run_dir / "generations.jsonl"
    if not os.path.lexists(path):
        raise PipelineError(f"{str(run_dir)!r} has no generations.jsonl to score")
    try:
        text = read_plain(path).decode("utf-8")  # a link, a FIFO or a device is refused
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, nested too deeply
        raise PipelineError(f"{path}: unreadable ({type(exc).__name__})") from None
    if not rows:
        raise PipelineError(f"{path} is empty: nothing to score")
    missing = {"generation", "question", "answer", *KEYS} - set(rows[0])
    if missing:
        raise PipelineError(f"{path} lacks the fields {sorted(missing)}")
    return pd.DataFrame(rows)


def check_score_plan(run_dir: Path, names: list[str], comet_model: str | None = None):
    """Everything ``score`` needs, checked before the folder is locked or changed: a run folder
    with readable generations, answer metrics that load, plain files to write; the generations,
    the metrics and each metric's file."""
    from interp_heads.metrics import resolve_metrics

    if not run_dir.is_dir() or not RunFolder(run_dir).is_run():
        raise PipelineError(f"{str(run_dir)!r} is not a run folder (no manifest.json)")
    if "accuracy" in [n.strip().lower() for n in names]:
        raise PipelineError("accuracy needs the task's aliases; it is in the run's own tables")
    gens = read_generations(run_dir)
    metrics = resolve_metrics(names, comet_model=comet_model, allow_fallback=False)
    logit = [m.name for m in metrics if m.per_condition]
    if logit:
        raise PipelineError(
            f"{', '.join(logit)} score the masked model's logits, not stored answers: "
            "ask for them in a run's metrics"
        )
    folder = RunFolder(run_dir)
    return gens, metrics, {m.name: _score_file(folder, m.name) for m in metrics}


@releases_locks
def score_run(run_dir: Path, names: list[str], comet_model: str | None = None) -> dict[str, Path]:
    """Score every stored generation with each metric; ``{metric name: csv path}``."""
    from interp_heads.metrics import MetricItem

    gens, metrics, paths = check_score_plan(run_dir, names, comet_model)
    RunFolder(run_dir).lock()  # after every check; released on the way out
    RunFolder(run_dir).clean_temps()  # killed writes' leftovers, links planted under such names
    RunFolder(run_dir).scores.mkdir(exist_ok=True)
    items = [
        MetricItem(src=str(q), mt=str(g), ref=str(a))
        for q, g, a in zip(gens["question"], gens["generation"], gens["answer"], strict=True)
    ]
    folder = RunFolder(run_dir)
    out = {}
    for metric in metrics:
        table = gens[[*KEYS, "example_id"]].copy()
        table.insert(4, "metric", metric.name)
        table.insert(5, "label", metric.label)
        table["value"] = metric.score(items)
        path = paths[metric.name]
        folder.write_frame(path, table)  # atomic: a killed run leaves the old file or the new
        out[metric.name] = path
        means = table.groupby([*KEYS, "label"], sort=False)["value"].mean().reset_index()
        print(means.to_string(index=False))
    return out


def _score_file(folder: RunFolder, metric: str) -> Path:
    """``scores/<metric>.csv`` of the run folder, refused when it (or ``scores/``) is a link or
    not a plain file: the scores are written inside the run folder, never through a link."""
    folder.check_links()  # scores/ itself
    path = folder.score_file(metric)
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise PipelineError(
            f"{str(path)!r} is a symbolic link or not a plain file; the scores are written only "
            "to plain files inside the run folder"
        )
    return path


def cmd_score(args) -> int:
    """Score a run folder's stored generations (e.g. COMET for a run made in the tl4 env)."""
    run_dir = Path(args.dir)
    for name, path in score_run(run_dir, args.metrics.split(","), args.comet_model).items():
        print(f"wrote {path} ({name})")
    return 0
