"""Task suites: built-in data sets, user task files, answer checking and baselines."""

from interp_heads.tasks.checking import is_correct, normalize
from interp_heads.tasks.io import (
    BUILTIN_FORMAT,
    TaskFormatError,
    list_tasks,
    load_task,
    read_task_file,
    save_task,
)
from interp_heads.tasks.schema import BUILTIN_TASKS, Example, Task

_LAZY = {
    "build_all": "builder",
    "build_task": "builder",
    "BaselineResult": "baseline",
    "evaluate_baseline": "baseline",
    "filter_correct": "baseline",
    "take_correct": "baseline",
    "resolve_format": "prompt_format",
}

__all__ = [
    "BUILTIN_FORMAT",
    "BUILTIN_TASKS",
    "BaselineResult",
    "Example",
    "Task",
    "TaskFormatError",
    "build_all",
    "build_task",
    "evaluate_baseline",
    "filter_correct",
    "resolve_format",
    "take_correct",
    "is_correct",
    "list_tasks",
    "load_task",
    "normalize",
    "read_task_file",
    "save_task",
]


def __getattr__(name: str):
    # builder and baseline are imported lazily so that `python -m interp_heads.tasks.builder`
    # (or .baseline) runs without a double import.
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"interp_heads.tasks.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
