"""Loading the tasks a run names (a built-in name or a task file), with one-line input errors."""

from __future__ import annotations

import json

from interp_heads.errors import PipelineError, one_line
from interp_heads.tasks.schema import Task

__all__ = ["PipelineError", "load_any_task"]


def load_any_task(name_or_path: str) -> Task:
    """A built-in task by name or a task JSONL file (via ``interp_heads.tasks.load_task``)."""
    from interp_heads.tasks import load_task

    try:
        task = load_task(name_or_path)
    except (FileNotFoundError, KeyError) as exc:
        raise PipelineError(f"unknown task {name_or_path!r} ({exc})") from None
    except OSError as exc:  # a name too long for the file system, a permission: unusable input
        raise PipelineError(f"task {name_or_path!r}: cannot read ({exc.strerror or exc})") from None
    except (ValueError, TypeError, json.JSONDecodeError) as exc:
        if isinstance(exc, PipelineError):
            raise
        msg = one_line(exc)
        raise PipelineError(f"task {name_or_path!r}: {msg}") from None
    if len(task) == 0:
        raise PipelineError(f"task {name_or_path!r} has no examples")
    return task
