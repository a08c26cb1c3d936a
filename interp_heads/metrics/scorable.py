"""What a metric can score: one question every verdict asks before it says "no".

A metric declares the prompt formats whose answers it can score (``Metric.formats``, with the
reason it cannot score the others in ``Metric.blind``) and the unmasked score below which a mask
has nothing left to remove (``Metric.floor``). A cell outside either reads "undecided: <reason>",
never "no" (``studies.spec_curve``, ``studies.compare.tables``), and the config check marks a
run whose metric cannot score a task's format (``pipeline.plan_check``).
"""

from __future__ import annotations

from interp_heads.metrics.base import Metric


def _metric_class(metric) -> type[Metric]:
    """The registered class of ``metric`` (a name, a class or an object); a name no metric is
    registered under (a table stored by another version) declares nothing: the base class."""
    from interp_heads.metrics.registry import METRICS

    if isinstance(metric, str):
        return METRICS.get(metric) if metric in METRICS else Metric
    return metric if isinstance(metric, type) else type(metric)


def blind_to(metric, fmt: str | None) -> str | None:
    """Why ``metric`` cannot score answers in prompt format ``fmt`` (None: it can, or the format
    is not known)."""
    cls = _metric_class(metric)
    if not fmt or not cls.formats or str(fmt) in cls.formats:
        return None
    said = cls.blind or f"{cls.name} cannot score {{fmt}} answers"
    return said.format(fmt=str(fmt)) + f"; it scores {', '.join(cls.formats)} answers"


def below_floor(metric, unmasked: float | None) -> str | None:
    """Why an unmasked score of ``unmasked`` leaves a mask nothing to remove (None: it does not,
    or the metric declares no floor, or the score is missing)."""
    cls = _metric_class(metric)
    if cls.floor is None or unmasked is None or unmasked != unmasked:
        return None
    if unmasked < cls.floor:
        return (
            f"unmasked {cls.name} {unmasked:.2f} is below its floor {cls.floor:.2f}: "
            "nothing left to remove"
        )
    return None


def scorable(metric, fmt: str | None = None, unmasked: float | None = None) -> str | None:
    """None when ``metric`` can judge a cell of prompt format ``fmt`` whose unmasked score is
    ``unmasked``; else the reason the cell is undecided (the format first)."""
    return blind_to(metric, fmt) or below_floor(metric, unmasked)
