"""Task suites: built-in data sets, user task files, answer checking and baselines."""

from interp_heads.tasks.checking import is_correct, normalize
from interp_heads.tasks.schema import BUILTIN_TASKS, Example, Task

__all__ = ["BUILTIN_TASKS", "Example", "Task", "is_correct", "normalize"]
