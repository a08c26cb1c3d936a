"""Task suites: built-in data sets, user task files, answer checking and baselines."""

from interp_heads.tasks.baseline import BaselineResult, evaluate_baseline, filter_correct
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
    "is_correct",
    "list_tasks",
    "load_task",
    "normalize",
    "read_task_file",
    "save_task",
]


def __getattr__(name: str):
    # Imported lazily so that `python -m interp_heads.tasks.builder` runs cleanly.
    if name in ("build_all", "build_task"):
        from interp_heads.tasks import builder

        return getattr(builder, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
