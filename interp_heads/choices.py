"""The fixed choices of config, CLI, tables and plots that are not extension points (one list each).

Each is a ``StrEnum`` (members compare equal to their strings, so ``"last" == MaskPositions.LAST``
and TOML/CLI strings work unchanged):

- :class:`MaskPositions`: where a mask acts (``positions =``): ``all``, ``last`` or ``generated``.
- :class:`PromptFormat`: how a prompt is rendered (``fmt =``).

The extension points (ablation kinds, attribution methods, selections, metrics, executors,
backends) have no list here: their registries (``interp_heads.registry``) are the one list of
their names, filled by the built-in files as their packages import them. An ablation kind is what
a masked head's ``hook_z`` is *replaced with*, never called "method"; a method is how heads are
*scored*.

Words: a *head label* is ``"L{layer}H{head}"`` (``heads.head_label``); a *metric label* is the
human-readable name of a metric (``Metric.label``, e.g. ``"Accuracy"``). Tables keep their column
``label`` for both (``ranking.csv``: head label, ``sweep.parquet``: metric label), as stored tables have them.
"""

from __future__ import annotations

from enum import StrEnum

from interp_heads.errors import InputError


class Choice(StrEnum):
    @classmethod
    def parse(cls, value: str, what: str | None = None):
        """The member for ``value`` (case, ``-`` and ``_`` ignored; aliases allowed), else ValueError."""
        key = str(value).strip().lower().replace("-", "").replace("_", "")
        for member in cls:
            names = {member.value, *getattr(member, "aliases", ())}
            if key in {n.replace("_", "") for n in names}:
                return member
        what = what or _WHAT.get(cls.__name__, cls.__name__)
        raise InputError(f"unknown {what} {value!r}; use one of {', '.join(cls.values())}")

    @classmethod
    def values(cls) -> tuple[str, ...]:
        return tuple(m.value for m in cls)


class MaskPositions(Choice):
    """Where a mask acts: every position, the last position of each forward pass, or the
    generated positions only (the prompt's pass unmasked: the Cognitive Mirrors study's scope)."""

    ALL = "all"
    LAST = "last"
    GENERATED = "generated"


class PromptFormat(Choice):
    AUTO = "auto"
    CHAT = "chat"
    PLAIN = "plain"
    COGNITIVE_MIRRORS = "cognitive_mirrors"  # the study's template, JSON answers


BASELINE = "baseline"  # the selection column of the unmasked condition (k = 0)

_WHAT = {"MaskPositions": "mask positions", "PromptFormat": "prompt format"}
