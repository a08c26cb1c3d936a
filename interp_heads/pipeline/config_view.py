"""A run's config as one step sees it: only the sections the step declares.

Every registered step lists the config sections it reads (``PipelineStep.config``, names of
``config.sections.SECTIONS``). ``pipeline.steps.run_steps`` hands the step a :class:`StepConfig`
in place of the ``RunConfig``: a read-only view that answers a field (or a variant's option) of a
declared section as the config does, and refuses one of another section with
:class:`UndeclaredConfigRead`, one line naming the step, the field and its section. The config's
own methods and properties (``method_options()``, ``given_ranking``...) run against the view, so
the fields they read are checked too; what reads the whole config (``to_dict``, ``digest``...)
needs every section. So a step's declaration is the truth of what it reads.
"""

from __future__ import annotations

import types
from functools import cache
from typing import Any

from interp_heads.config.options import option_fields, section_options
from interp_heads.config.run_config import RunConfig
from interp_heads.config.sections import SECTIONS
from interp_heads.errors import PipelineError

# What reads every field of the config at once: a step calling one declares every section.
WHOLE = frozenset(
    {"to_dict", "digest", "model_dump", "model_dump_json", "given", "changed", "model_copy"}
)


class UndeclaredConfigRead(PipelineError):
    """A step read a config field of a section it does not declare (``PipelineStep.config``)."""


@cache
def _sections_of() -> dict[str, str]:
    """Each config key (field or variant option) by the section it belongs to."""
    owner = {name: s for s, cls in SECTIONS.items() for name in cls.model_fields}
    for s in SECTIONS:
        owner |= {name: s for name in section_options(s)}
    return owner


def section_of(name: str) -> str | None:
    """The section of config key ``name``; None: not a key (a method, a private attribute)."""
    found = _sections_of().get(name)
    if found is None and name in option_fields():  # a variant registered after the first call
        _sections_of.cache_clear()
        found = _sections_of().get(name)
    return found


class StepConfig:
    """``config`` as step ``step`` may read it: the keys of ``sections`` only (see the module)."""

    __slots__ = ("_config", "_step", "_sections")

    def __init__(self, config: RunConfig, step: str, sections: tuple[str, ...]) -> None:
        object.__setattr__(self, "_config", config)
        object.__setattr__(self, "_step", step)
        object.__setattr__(self, "_sections", frozenset(sections))

    def _refuse(self, what: str, section: str) -> UndeclaredConfigRead:
        declared = ", ".join(sorted(self._sections)) or "none"
        return UndeclaredConfigRead(
            f"step {self._step!r} reads config {what} of section {section!r}, which it does not "
            f"declare (its config sections: {declared})"
        )

    def _check(self, name: str) -> None:
        section = section_of(name)
        if section is not None and section not in self._sections:
            raise self._refuse(f"field {name!r}", section)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy, pickle: the view's own (none), never the config's
            raise AttributeError(name)
        config = object.__getattribute__(self, "_config")
        if name.startswith("_"):  # the config's private state, read by its own methods
            return getattr(config, name)
        if section_of(name) is not None:
            self._check(name)
            return getattr(config, name)
        if name in WHOLE:
            missing = sorted(set(SECTIONS) - self._sections)
            if missing:
                raise self._refuse(f"as a whole ({name})", missing[0])
            return getattr(config, name)
        own = type(config).__dict__.get(name, RunConfig.__dict__.get(name))
        if isinstance(own, property):  # read against the view: its fields are checked
            return own.fget(self)
        if isinstance(own, types.FunctionType):
            return types.MethodType(own, self)
        return getattr(config, name)  # a class method, pydantic's own attributes

    def option(self, name: str) -> Any:
        """A variant's option (its section declared)."""
        self._check(name)
        return self._config.option(name)

    def options(self, section: str | None = None) -> dict:
        """The variants' options of ``section`` (declared), or of every section (all declared)."""
        for s in [section] if section else [s for s in SECTIONS if section_options(s)]:
            if s not in self._sections:
                raise self._refuse(f"options ({section or 'all'})", s)
        return self._config.options(section)

    def section(self, name: str):
        """One declared section as its own typed object."""
        if name not in self._sections:
            raise self._refuse("section", name)
        return self._config.section(name)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a step's config is read-only")

    def __repr__(self) -> str:
        return f"StepConfig(step={self._step!r}, sections={sorted(self._sections)})"
