"""The executor registry: a name (``executor =`` in a config, ``--executor``) -> a factory.

A factory takes the run's settings (a ``RunConfig`` or the CLI's arguments: ``model``,
``device``, ``n_workers``, ``ray_address``, ``n_devices``) and the driver's model, and returns
an ``Executor`` (``execution.base``). ``local``, ``plain`` and ``packed`` are in
``execution.local``; ``ray`` in ``execution.ray``. The built-in names are ``vocab.ExecutorName``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from interp_heads.registry import Registry
from interp_heads.vocab import ExecutorName


def _load_builtins() -> None:
    from interp_heads.execution import local, ray  # noqa: F401


EXECUTORS: Registry[Callable] = Registry("executor", _load_builtins, vocab=ExecutorName)


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
