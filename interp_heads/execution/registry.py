"""The executor registry: a name (``executor =`` in a config, ``--executor``) -> a class.

A registered class has a ``name`` and ``build(options, ctx)``: it takes its own ``Options`` (None
when it declares none; Ray's ``ray_address``, ``n_workers``) and an :class:`ExecutorContext`: the
run's ``RunConfig`` (``model``, ``device``, ``n_devices``, ``backend``) and the driver's model,
and returns an ``Executor`` (``execution.base``). The built-in classes
(``execution.builtin``: ``local``, ``plain`` and ``packed`` of ``execution.local``, ``ray`` of
``execution.ray``) import their executor when they build it, so the names are known without
torch.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from interp_heads.registry import Registry


@dataclass(frozen=True)
class ExecutorContext:
    """What every executor is built with besides its options (``EXECUTORS.build``).

    Attributes:
        settings: the run's ``RunConfig``.
        model: the driver's model (the in-process executors run it; Ray's actors must match its
            fingerprint).
    """

    settings: Any
    model: Any


EXECUTORS: Registry[type] = Registry("executor", context=ExecutorContext)


def make_executor(settings, model):
    """The executor ``settings.executor`` names, built for ``model``."""
    return EXECUTORS.build(
        settings.executor, settings.options("placement"), ExecutorContext(settings, model)
    )


@contextlib.contextmanager
def open_executor(settings, model):
    """:func:`make_executor`, closed on exit (Ray actors stopped)."""
    executor = make_executor(settings, model)
    try:
        yield executor
    finally:
        executor.close()
