"""Executors: where a sweep's masked generations run (in process, packed, Ray) and CPU threads.

Importing the package registers the built-in executors (``execution.builtin``).
"""

from interp_heads.execution import builtin  # noqa: F401 (registers the built-in executors)
