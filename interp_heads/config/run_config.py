"""One description of a run: typed config sections, validated by pydantic, shared with the CLI.

A run's config (``RunConfig``) is the union of small typed sections, each usable alone (their
fields and the table of which key belongs where: :mod:`interp_heads.config.sections`).

A TOML file may be flat (``ks = [16, 32]``, as the shipped configs are), sectioned (``[sweep]
ks = [16, 32]``) or under one ``[run]`` table. Unknown keys, keys in the wrong section and bad
values raise :class:`~interp_heads.errors.PipelineError` with one line. The CLI builds its
flags for the same settings from these fields (``config.flags.cli_flag``): type, default,
choices and help come from there, so they cannot drift apart.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from pydantic import PrivateAttr, ValidationError

from interp_heads.attribution.methods import METHODS, Options, check_method
from interp_heads.config.flags import cli_flag
from interp_heads.config.sections import (
    DIGEST_IF_SET,
    MAX_SEEDS,
    NOT_IN_DIGEST,
    SECTIONS,
    AblationSection,
    AttributionSection,
    GenerationSection,
    MetricsSection,
    ModelSection,
    PlacementSection,
    SweepSection,
    TasksSection,
    _Section,
)
from interp_heads.errors import PipelineError
from interp_heads.store import config_digest
from interp_heads.tasks.schema import BUILTIN_TASKS

__all__ = [
    "DIGEST_IF_SET",
    "MAX_SEEDS",
    "NOT_IN_DIGEST",
    "SECTIONS",
    "AblationSection",
    "AttributionSection",
    "GenerationSection",
    "MetricsSection",
    "ModelSection",
    "PlacementSection",
    "RunConfig",
    "SweepSection",
    "TasksSection",
    "check_ks",
    "cli_flag",
]


class RunConfig(
    PlacementSection,
    MetricsSection,
    GenerationSection,
    SweepSection,
    AblationSection,
    AttributionSection,
    TasksSection,
    ModelSection,
):
    """Everything that determines a run's results (hashed into ``manifest.json``).

    Fields are those of the sections (see the module docstring); ``cfg.section("sweep")`` gives
    one section as its own typed object.
    """

    _base_dir: Path | None = PrivateAttr(None)  # the config file's folder (``task_path``)

    def __init__(self, **data: Any):
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise PipelineError(f"config: {_one_line(exc)}") from None
        from interp_heads.config import validation

        validation.check_device(self.device)
        try:
            self.method_options()  # the method's rules (attribution.methods.check_method)
        except PipelineError as exc:
            raise PipelineError(f"config: {exc}") from None
        multi = self.attribution != "auto" and METHODS.get(self.attribution).multi_task
        if multi and len(set(self.tasks)) < 2 and not _names_skills(self.tasks):
            raise PipelineError(
                "config: attribution 'probe' predicts the task from the heads: it needs two or "
                "more tasks"
            )

    def method_options(self, has_corrupted: bool | None = None, task: str | None = None):
        """The attribution method's options, checked (``methods.check_method``) and completed.

        ``has_corrupted``/``task``: once a task is read, for the method ``auto`` means for it.
        """
        opts = Options(
            ablation=self.ablation,
            refine=self.refine,
            exact_layers=self.exact_layers,
            rivals=self.rivals,
            lookahead=self.lookahead,
        )
        return check_method(self.attribution, opts, has_corrupted=has_corrupted, task=task)

    @classmethod
    def from_dict(cls, d: dict, source: str = "config") -> RunConfig:
        """Build from a flat or sectioned mapping, refusing unknown keys and bad values."""
        flat = _flatten(d, source)
        unknown = sorted(set(flat) - set(cls.model_fields))
        if unknown:
            raise PipelineError(
                f"{source}: unknown key(s) {', '.join(unknown)}; known: {', '.join(cls.model_fields)}"
            )
        try:
            return cls(**flat)
        except PipelineError as exc:
            raise PipelineError(str(exc).replace("config:", f"{source}:", 1)) from None

    @classmethod
    def from_toml(cls, path: str | os.PathLike) -> RunConfig:
        """Read a TOML file (flat keys, sections, or everything under a ``[run]`` table)."""
        path = Path(path)
        try:
            d = tomllib.loads(path.read_text(encoding="utf-8-sig"))  # a BOM is fine
        except FileNotFoundError:
            raise PipelineError(f"config file {str(path)!r} not found") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise PipelineError(f"malformed config {str(path)!r}: {exc}") from None
        if set(d) == {"run"} and isinstance(d["run"], dict):
            d = d["run"]
        config = cls.from_dict(d, source=str(path))
        config._base_dir = path.resolve().parent
        return config

    def task_path(self, spec: str) -> str:
        """A task of ``tasks`` as loadable: a relative file path resolves against the config's
        folder (when the config came from a file and the task is there), else as given."""
        base = self._base_dir
        if base is None or spec in BUILTIN_TASKS or Path(spec).is_absolute():
            return spec
        there = base / spec
        return str(there) if there.exists() or not Path(spec).exists() else spec

    def section(self, name: str) -> _Section:
        """One section (``"model"``, ``"sweep"``...) as its own typed object."""
        cls = SECTIONS[name]
        return cls(**{k: getattr(self, k) for k in cls.model_fields})

    def resolved_ks(self, n_total_heads: int) -> list[int]:
        """``ks`` plus ``scaled_ks`` turned into head counts, sorted, unique."""
        extra = [max(1, round(f * n_total_heads)) for f in self.scaled_ks or []]
        ks = sorted(set(self.ks) | set(extra))
        check_ks(ks, n_total_heads)
        return ks

    def to_dict(self) -> dict:
        """Plain JSON-able values (enums as their strings), as in the TOML file."""
        return self.model_dump(mode="json")

    def digest(self) -> str:
        d = {
            k: v
            for k, v in self.to_dict().items()
            if k not in NOT_IN_DIGEST and not (k in DIGEST_IF_SET and v == DIGEST_IF_SET[k])
        }
        return config_digest(d)


def check_ks(ks, n_total_heads: int | None = None) -> None:
    """Every k must be in ``1..n_total_heads``."""
    if not ks:
        raise PipelineError("ks is empty")
    for k in ks:
        if k <= 0:
            raise PipelineError(f"k={k} must be > 0")
        if n_total_heads is not None and k > n_total_heads:
            raise PipelineError(f"k={k} exceeds the number of heads ({n_total_heads})")


def _flatten(d: dict, source: str) -> dict:
    flat: dict = {}
    for key, value in d.items():
        if key in SECTIONS and isinstance(value, dict):  # no field takes a table as its value
            allowed = SECTIONS[key].model_fields
            for sub, v in value.items():
                if sub not in allowed:
                    raise PipelineError(
                        f"{source}: [{key}] has no key {sub!r}; it holds {', '.join(allowed)}"
                    )
                if sub in flat:
                    raise PipelineError(f"{source}: {sub} given twice")
                flat[sub] = v
        elif key in flat:
            raise PipelineError(f"{source}: {key} given twice")
        else:
            flat[key] = value
    return flat


def _one_line(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"] if not str(p).startswith("function-"))
    msg = err["msg"].replace("Value error, ", "").replace("Input should be", "must be")
    more = f" (+{exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where} = {err.get('input')!r}: {msg}{more}"


def _names_skills(specs: list[str]) -> bool:
    """Whether a spec names a whole CogQA file (one task per skill, so maybe several)."""
    from interp_heads.tasks.cogqa import is_cogqa, split_spec

    return any(is_cogqa(t) and split_spec(t)[1] is None for t in specs)
