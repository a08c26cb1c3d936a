"""Loading the tasks a run names (a built-in name or a task file), with one-line input errors.

One spec may name several tasks: a CogQA file (``FILE.json``, ``tasks.cogqa``) holds one task
per cognitive skill (``FILE.json:Retrieval`` names one of them).
"""

from __future__ import annotations

import json
from pathlib import Path

from interp_heads.errors import PipelineError, one_line
from interp_heads.tasks.schema import Task

__all__ = ["PipelineError", "load_any_task", "load_any_tasks"]


def load_any_tasks(spec: str) -> list[Task]:
    """The tasks a spec names: a CogQA file's skills, else the one task of ``load_any_task``."""
    from interp_heads.tasks.cogqa import is_cogqa, read_cogqa

    if not is_cogqa(spec):
        return [load_any_task(spec)]
    return _checked(spec, read_cogqa)


def load_any_task(name_or_path: str) -> Task:
    """A built-in task by name, a task JSONL/CSV file (via ``interp_heads.tasks.load_task``) or
    one skill of a CogQA file (``FILE.json:Skill``, or a file that holds one skill)."""
    from interp_heads.tasks import load_task
    from interp_heads.tasks.cogqa import is_cogqa, read_cogqa

    if is_cogqa(name_or_path):
        tasks = _checked(name_or_path, read_cogqa)
        if len(tasks) > 1:
            names = ", ".join(t.meta["skill"] for t in tasks)
            raise PipelineError(
                f"task {name_or_path!r}: a CogQA file with {len(tasks)} cognitive skills; name "
                f"one as FILE.json:<skill> ({names})"
            )
        return tasks[0]
    (task,) = _checked(name_or_path, lambda spec: [load_task(spec)])
    return task


def _unnamed(message: str, spec: str) -> str:
    """A loader's ``<file>: <reason>`` without the file's name, which the line already gives
    (``task 'capitals': unknown task``); ``<file>:<line>: <reason>`` keeps its line."""
    name = Path(spec).name
    return message[len(name) + 2 :] if name and message.startswith(f"{name}: ") else message


def _checked(spec: str, load) -> list[Task]:
    """``load(spec)``, its input errors as one-line ``PipelineError``; no task may be empty."""
    try:
        tasks = load(spec)
    except (FileNotFoundError, KeyError) as exc:
        raise PipelineError(f"unknown task {spec!r} ({exc})") from None
    except OSError as exc:  # a name too long for the file system, a permission: unusable input
        raise PipelineError(f"task {spec!r}: cannot read ({exc.strerror or exc})") from None
    except (ValueError, TypeError, json.JSONDecodeError) as exc:
        if isinstance(exc, PipelineError):
            raise
        raise PipelineError(f"task {spec!r}: {_unnamed(one_line(exc), spec)}") from None
    if any(len(task) == 0 for task in tasks):
        raise PipelineError(f"task {spec!r} has no examples")
    return tasks
