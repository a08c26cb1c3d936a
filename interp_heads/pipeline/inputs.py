"""A run's inputs that are checked without a model: its folder, tasks, ranking and model name.

``build_experiment`` checks these first, and so does the command line before it imports torch
and TransformerLens (``interp_heads.cli.early``): a typo in a path, a task file or a model name
is one line in a fraction of a second. Nothing here imports torch, TransformerLens or pandas.
"""

from __future__ import annotations

import os

from interp_heads.config.run_config import RunConfig
from interp_heads.errors import ModelLoadError, PipelineError, one_line
from interp_heads.models.specs import check_model_name
from interp_heads.pipeline.loading import load_any_tasks
from interp_heads.pipeline.rankings import ranking_file
from interp_heads.store.folder import RunFolder


def load_tasks(config: RunConfig) -> dict:
    """The config's tasks by name, each without its first ``skip`` examples and cut to
    ``max_examples`` (a CogQA file: one task per skill); a task named twice is refused."""
    tasks = {}
    for spec in config.tasks:
        for task in load_any_tasks(config.task_path(spec)):  # a CogQA file: one per skill
            task = task.split(config.skip, allow_empty=True)[1].subset(n=config.max_examples)
            if task.name in tasks:
                raise PipelineError(f"task {task.name!r} is listed twice")
            tasks[task.name] = task
    return tasks


def check_inputs(
    config: RunConfig, out_dir: str | os.PathLike, force: bool = False, ranking: bool = True
) -> dict:
    """The run folder usable, the tasks readable, the ranking found (unless ``ranking`` is
    False: a study run's ranking may be another run's, made first) and the model's name one the
    loader knows, in that order (the order a run reports them in); the tasks by name."""
    RunFolder(out_dir).check_usable(force)  # before any work
    tasks = load_tasks(config)  # a task file or ranking path in error: said before the model loads
    if ranking and config.ranking is not None:
        ranking_file(config.ranking)
    try:
        check_model_name(config.model, config.backend)
    except ModelLoadError as exc:
        raise PipelineError(one_line(exc)) from None
    return tasks
