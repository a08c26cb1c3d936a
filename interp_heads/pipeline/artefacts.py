"""What a run's steps hand each other: artefacts by declared name, and each step's view of them.

Every registered step (``pipeline.steps.PipelineStep``) declares the artefacts it ``reads`` and
the ones it ``writes``. The plan's checks (``pipeline.plan_check.check_plan``) provide the first
ones before the run claims its folder (:data:`PLANNED`: prompt formats, metrics, the k grid, the
rank/eval splits, a given ranking...); after that only ``pipeline.steps.run_steps`` stores into
the run's :class:`Artefacts`, and only what a step returned under the names it declared. A step
is handed an :class:`Inputs` holding exactly what it declared, so the route of every value
through a run can be read off the registry (``Artefacts.writer`` says which step made each).

:func:`check_reads` is the plan's one pass over the declared inputs: a step that reads what no
earlier step writes and the plan does not provide is refused before the folder is claimed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from interp_heads.errors import PipelineError

# The artefacts the plan provides before any step runs (``pipeline.experiment.build_experiment``).
# ``rankings`` is the plan's only when the config gives the ranking (``ranking =``, ``heads =``);
# the split (``splits``, ``base_rows``, ``baseline_entries``) only when the run takes ``baseline``.
PLANNED = frozenset(
    {"fmts", "fmt_infos", "metrics", "ks", "sweep_config", "given", "splits", "base_rows",
     "baseline_entries", "rankings"}
)  # fmt: skip


class Artefacts:
    """The run's artefacts by name, and which step (or ``"plan"``) wrote each."""

    def __init__(self, values: Mapping[str, Any] | None = None, writer: str = "plan") -> None:
        self._values: dict[str, Any] = {}
        self.writer: dict[str, str] = {}
        self.put(values or {}, writer)

    def put(self, values: Mapping[str, Any], writer: str) -> None:
        for name, value in values.items():
            self._values[name] = value
            self.writer[name] = writer

    def get(self, name: str, default: Any = None) -> Any:
        return self._values.get(name, default)

    def __contains__(self, name: str) -> bool:
        return name in self._values

    def names(self) -> set[str]:
        return set(self._values)

    def inputs(self, step: str, reads: Iterable[str]) -> Inputs:
        """What ``step`` declared it reads (each one present: :func:`check_reads` made sure)."""
        return Inputs(step, {name: self._values[name] for name in reads})


class Inputs:
    """A step's declared inputs as attributes (``inputs.splits``); reading an undeclared one is
    an error that names the step, so a step cannot use what its declaration does not say."""

    def __init__(self, step: str, values: dict[str, Any]) -> None:
        object.__setattr__(self, "_step", step)
        object.__setattr__(self, "_values", values)

    def __getattr__(self, name: str) -> Any:
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        step = object.__getattribute__(self, "_step")
        raise AttributeError(f"step {step!r} does not declare that it reads {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a step's inputs are read-only; a step returns what it writes")

    @property
    def eval_tasks(self) -> dict:
        """Each task's evaluated examples (the eval half of ``splits``)."""
        return {name: ev for name, (_, ev) in self.splits.items()}


def outputs(step: str, writes: tuple[str, ...], made: Any) -> dict[str, Any]:
    """What ``step`` returned, by name: a dataclass's fields or a mapping's keys, which must be
    exactly its declared ``writes``.

    Raises:
        TypeError: the step returned other names than it declares.
    """
    if dataclasses.is_dataclass(made) and not isinstance(made, type):
        values = {f.name: getattr(made, f.name) for f in dataclasses.fields(made)}
    elif isinstance(made, Mapping):
        values = dict(made)
    elif made is None and not writes:
        values = {}
    else:
        raise TypeError(f"step {step!r} returned {type(made).__name__}, not its declared outputs")
    if set(values) != set(writes):
        raise TypeError(
            f"step {step!r} declares it writes {sorted(writes)} but returned {sorted(values)}"
        )
    return values


def check_reads(steps: list, provided: Iterable[str], sections: Iterable[str]) -> None:
    """One pass over the steps in order: every artefact a step reads is provided by the plan or
    written by an earlier step, and every config section it reads exists.

    Raises:
        PipelineError: the first step whose input nothing provides, with one line.
    """
    have, known = set(provided), set(sections)
    for step in steps:
        missing = [name for name in step.reads if name not in have]
        if missing:
            raise PipelineError(
                f"step {step.name!r} reads {', '.join(map(repr, missing))}, which no earlier "
                "step writes and the plan does not provide"
            )
        unknown = [s for s in step.config if s not in known]
        if unknown:
            raise PipelineError(
                f"step {step.name!r} reads config section(s) {', '.join(map(repr, unknown))}, "
                f"which the config does not have (sections: {', '.join(sorted(known))})"
            )
        have |= set(step.writes)
