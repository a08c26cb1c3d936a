"""The metric registry: names from the CLI/config become :class:`Metric` objects.

Each metric's file registers its class (``@METRICS.register`` on ``class ChrF``) and the package
imports every metric's file, so importing ``interp_heads.metrics`` registers them; a class builds
its object with :meth:`Metric.build` from its options and a ``MetricContext``; COMET overrides
it to fall back to the offline MiniLM stand-in (with a printed note) when no checkpoint loads. A user's metric is one file with a
``Metric`` subclass and its registration. The package's import order is the registry's order.
"""

from __future__ import annotations

from interp_heads.metrics.base import Metric, MetricContext
from interp_heads.registry import Registry

METRICS: Registry[type[Metric]] = Registry("metric", context=MetricContext)


def resolve_metrics(names: list[str], allow_fallback: bool = True, **options) -> list[Metric]:
    """Metric objects for ``names`` (any registered name), duplicates dropped; ``options`` are
    the metrics' options by name (``METRICS.options()``), each checked by its ``Options``.

    ``comet`` becomes a ``CometMetric`` when its checkpoint (option ``comet_model``, default
    ``Unbabel/wmt22-comet-da``) loads; otherwise, with ``allow_fallback``, a ``MiniLMCosine``
    and a printed note, else ``MetricUnavailable`` is raised.

    Raises:
        InputError: for an unknown metric name or option.
        MetricUnavailable: when COMET cannot load and ``allow_fallback`` is False.
    """
    out: list[Metric] = []
    for raw in names:
        metric = METRICS.build(raw, options, MetricContext(allow_fallback))
        if metric.name not in {m.name for m in out}:
            out.append(metric)
    return out
