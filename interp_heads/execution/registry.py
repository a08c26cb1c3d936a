"""The executor registry: a name (``executor =`` in a config, ``--executor``) -> a factory.

A factory takes the run's settings (a ``RunConfig`` or the CLI's arguments: ``model``,
``device``, ``n_workers``, ``ray_address``, ``n_devices``) and the driver's model, and returns
an ``Executor`` (``execution.base``). The built-in factories (``execution.builtin``: ``local``,
``plain`` and ``packed`` of ``execution.local``, ``ray`` of ``execution.ray``) import their
executor when called, so the names are known without torch. The built-in names are
``vocab.ExecutorName``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from interp_heads.registry import Registry
from interp_heads.vocab import ExecutorName

EXECUTORS: Registry[Callable] = Registry("executor", vocab=ExecutorName)


def make_executor(settings, model):
    """The executor ``settings.executor`` names (default ``local``), built for ``model``."""
    name = getattr(settings, "executor", None) or "local"
    return EXECUTORS.get(name)(settings, model)


@contextlib.contextmanager
def open_executor(settings, model):
    """:func:`make_executor`, closed on exit (Ray actors stopped)."""
    executor = make_executor(settings, model)
    try:
        yield executor
    finally:
        executor.close()
