"""One description of a run: typed config sections, validated by pydantic, shared with the CLI.

A run's config (``RunConfig``) is the union of small typed sections, each usable alone (their
fields and the table of which key belongs where: :mod:`interp_heads.config.sections`).

A TOML file may be flat (``ks = [16, 32]``, as the shipped configs are), sectioned (``[sweep]
ks = [16, 32]``) or under one ``[run]`` table. Unknown keys, keys in the wrong section and bad
values raise :class:`~interp_heads.errors.PipelineError` with one line. The CLI builds its
flags for the same settings from these fields (``config.flags.cli_flag``): type, default,
choices and help come from there, so they cannot drift apart.

A ``RunConfig`` is frozen once validated: assigning to it raises ``FrozenInstanceError``. A
changed config is a new one, validated again: ``config.changed({"threads": 2})`` (or pydantic's
``config.model_copy(update=...)``, which goes through it).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from dataclasses import FrozenInstanceError
from pathlib import Path
from typing import Any

from pydantic import PrivateAttr, ValidationError

from interp_heads.attribution.methods import METHODS, check_method
from interp_heads.config.digest import DIGEST_IF_SET, NOT_IN_DIGEST, digest_of
from interp_heads.config.flags import cli_flag
from interp_heads.config.options import (
    checked_options,
    option_fields,
    options_model,
    section_options,
    split_options,
)
from interp_heads.config.reading import check_ks, flatten, names_skills, one_line, read_toml
from interp_heads.config.sections import (
    MAX_SEEDS,
    SECTIONS,
    AblationSection,
    AnalysisSection,
    AttributionSection,
    GenerationSection,
    MetricsSection,
    ModelSection,
    PlacementSection,
    RankingSection,
    Section,
    SweepSection,
    TasksSection,
)
from interp_heads.errors import PipelineError
from interp_heads.tasks.schema import BUILTIN_TASKS

__all__ = [
    "DIGEST_IF_SET",
    "NOT_IN_DIGEST",
    "MAX_SEEDS",
    "SECTIONS",
    "AblationSection",
    "AnalysisSection",
    "AttributionSection",
    "GenerationSection",
    "MetricsSection",
    "ModelSection",
    "PlacementSection",
    "RankingSection",
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
    AnalysisSection,
    SweepSection,
    AblationSection,
    AttributionSection,
    RankingSection,
    TasksSection,
    ModelSection,
):
    """Everything that determines a run's results (hashed into ``manifest.json``).

    Fields are those of the sections (see the module docstring); ``cfg.section("sweep")`` gives
    one section as its own typed object. The registered variants' options (``config.options``)
    are keys too, held apart from the fields: ``cfg.option(name)``, ``cfg.options()``.
    """

    _base_dir: Path | None = PrivateAttr(None)  # the config file's folder (``task_path``)
    _options: dict = PrivateAttr(default_factory=dict)  # the variants' options, checked
    _frozen: bool = PrivateAttr(False)  # set once validated: no assignment after that

    def __init__(self, _base_dir: str | os.PathLike | None = None, **data: Any):
        """Validate ``data`` (config keys); ``_base_dir``: the folder of the file it came from,
        against which relative task paths resolve (``task_path``)."""
        given, data = split_options(data)
        try:
            super().__init__(**data)
            self._options = checked_options(given)
        except ValidationError as exc:
            raise PipelineError(f"config: {one_line(exc)}") from None
        self._base_dir = None if _base_dir is None else Path(_base_dir)
        from interp_heads.config import validation

        validation.check_device(self.device)
        self._check_ranking_source()
        try:  # the method's rules (attribution.methods.check_method); a given ranking is made
            if not self.given_ranking:  # already: which kind its method estimates is moot here
                self.method_options()
        except PipelineError as exc:
            raise PipelineError(f"config: {exc}") from None
        method = self.method_class()
        if (
            method is not None
            and method.multi_task
            and not self.given_ranking
            and len(set(self.tasks)) < 2
            and not names_skills(self.tasks)
        ):
            raise PipelineError(
                "config: attribution 'probe' predicts the task from the heads: it needs two or "
                "more tasks"
            )
        self._frozen = True

    @property
    def given_ranking(self) -> bool:
        """Whether the run masks a ranking made elsewhere (``ranking`` or ``heads``) instead of
        ranking the heads itself."""
        return self.ranking is not None or self.heads is not None

    def _check_ranking_source(self) -> None:
        if self.ranking is not None and self.heads is not None:
            raise PipelineError(
                "config: give --heads or --ranking, not both (--heads masks the heads listed; "
                "--ranking masks the top k of a ranking)"
            )
        if self.heads is not None and self.elbow:
            raise PipelineError(
                "config: elbow needs a ranking with scores (--ranking, ranking =), not --heads"
            )
        if self.damage_matched and "randomk" not in self.selections:
            raise PipelineError("config: damage_matched needs the randomk selection")
        if self.ranking_task is not None and self.ranking is None:
            raise PipelineError("config: ranking_task needs ranking")
        logit = {"answer_logprob", "logit_diff", "kl_unmasked"}
        if (
            self.sufficiency
            and str(self.positions) != "all"
            and logit & set(self.sufficiency_metrics)
        ):
            raise PipelineError(
                "config: the sufficiency metrics answer_logprob, logit_diff and kl_unmasked need "
                "positions = 'all'"
            )
        if self.sufficiency_search and not self.sufficiency:
            raise PipelineError("config: sufficiency_search is an option of sufficiency = true")
        if self.sufficiency_search:
            self._check_search_ablation()
        for key in ("sufficiency_search_ablation", "sufficiency_patience", "sufficiency_upper",
                    "sufficiency_resamples"):  # fmt: skip
            if not self.sufficiency_search and getattr(self, key) != DIGEST_IF_SET[key]:
                raise PipelineError(f"config: {key} is an option of sufficiency_search = true")
        if self.given_ranking and self.sufficiency_search:
            raise PipelineError(
                "config: sufficiency_search searches the run's rank examples: a run with a given "
                "ranking has none"
            )
        if self.given_ranking and "stability" in self.analyses:
            raise PipelineError(
                "config: analyses 'stability' re-ranks the run's rank examples: a run with a "
                "given ranking has none"
            )

    def _check_search_ablation(self) -> None:
        from interp_heads.analysis.kept_model import ABLATIONS  # torch: only when searching

        if str(self.search_ablation) not in ABLATIONS:
            raise PipelineError(
                f"config: sufficiency_search ablates with one of {', '.join(ABLATIONS)}, "
                f"not {str(self.search_ablation)!r}"
            )

    def method_class(self):
        """The attribution method's registered class; None for ``auto``, which picks a method
        per task (never a multi-task one)."""
        name = str(self.attribution)
        return METHODS.get(name) if name in METHODS.names() else None

    @property
    def search_ablation(self) -> str:
        """What the sufficient-set search ablates heads not kept with: its own option, else the
        run's ``ablation``."""
        own = self.sufficiency_search_ablation
        return str(self.ablation) if own is None else str(own)

    def sweep_config(self, ks: list[int], fmts: dict[str, str]):
        """The sweep's settings (``sweep.config.SweepConfig``): the one mapping from a run's
        config; ``fmt`` is the tasks' one prompt format, or None when they differ."""
        from interp_heads.sweep.config import FROM_RUN_CONFIG, SweepConfig

        return SweepConfig(
            ks=ks,
            options=self.options("ablation") | self.options("sweep"),
            fmt=next(iter(set(fmts.values()))) if len(set(fmts.values())) == 1 else None,
            **{name: getattr(self, name) for name in FROM_RUN_CONFIG},
        )

    def method_options(
        self, has_corrupted: bool | None = None, task: str | None = None, model_cfg=None
    ):
        """The attribution method's options, checked (``methods.check_method``) and completed.

        ``has_corrupted``/``task``: once a task is read, for the method ``auto`` means for it;
        ``model_cfg``: once the model is loaded, with the range checks.
        """
        return check_method(
            self.attribution,
            self.method_settings(),
            has_corrupted=has_corrupted,
            model_cfg=model_cfg,
            task=task,
        )

    def attribution_settings(self, fmt: str) -> dict:
        """``attribute_heads``'s keywords for one task in ``fmt``, as its resume key holds them
        (``exact_layers`` as configured; the pipeline adds the options that resolve per task;
        ``batch_padding`` only when set, so the keys of runs without it are unchanged)."""
        settings = {
            "method": str(self.attribution),
            "refine": self.refine,
            "exact_layers": self.exact_layers,
            "batch_size": self.batch_size,
            "fmt": fmt,
            "ablation": str(self.ablation),
        }
        if self.batch_padding is not None:
            settings["batch_padding"] = self.batch_padding
        return settings

    def method_settings(self) -> dict:
        """The config's values of every attribution option (common and each method's own)."""
        return {"ablation": self.ablation, "refine": self.refine, **self.options("attribution")}

    def __getattr__(self, name: str):
        """A registered variant's option reads as an attribute too (``cfg.probe_rows``)."""
        if not name.startswith("_") and name in option_fields():
            return self.option(name)
        return super().__getattr__(name)

    def __setattr__(self, name: str, value) -> None:
        """Refused once validated (the config is frozen): :meth:`changed` makes a changed copy."""
        if getattr(self, "__pydantic_private__", None) and self._frozen:
            raise FrozenInstanceError(
                f"RunConfig is frozen after validation: config.changed({{{name!r}: ...}}) makes "
                "a changed, validated copy"
            )
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"RunConfig is frozen after validation: cannot delete {name!r}")

    def given(self) -> dict:
        """The keys given when it was built (fields and variants' options), by name: what
        :meth:`changed` builds on, so a key left at its default stays unset (``resolved_ks``)."""
        return {k: getattr(self, k) for k in self.model_fields_set} | dict(self._options)

    def changed(self, changes: Mapping[str, Any], source: str = "config") -> RunConfig:
        """A new config: this one's given keys with ``changes`` on top, validated again (unknown
        keys and bad values raise ``PipelineError`` naming ``source``); the config file's folder
        is kept."""
        unknown = sorted(set(changes) - set(self.keys()))
        if unknown:
            raise PipelineError(
                f"{source}: unknown key(s) {', '.join(unknown)}; known: {', '.join(self.keys())}"
            )
        try:
            return type(self)(self._base_dir, **{**self.given(), **changes})
        except PipelineError as exc:
            raise PipelineError(str(exc).replace("config:", f"{source}:", 1)) from None

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False):
        """A copy with ``update``, validated again (:meth:`changed`), never pydantic's unchecked
        one: a frozen config only changes into another valid one."""
        new = self.changed(update or {})
        return copy.deepcopy(new) if deep else new

    def option(self, name: str):
        """The value of a registered variant's option (its default when not given)."""
        return self.options()[name]

    def options(self, section: str | None = None) -> dict:
        """The registered variants' options (``section``: of that section only), by name."""
        values = dict(options_model()(**{k: v for k, v in self._options.items()
                                         if k in option_fields()}))  # fmt: skip
        names = section_options(section) if section else values
        return {n: values[n] for n in names}

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        """Every config key: the sections' fields and the registered variants' options."""
        return (*cls.model_fields, *option_fields())

    @classmethod
    def from_dict(
        cls, d: dict, source: str = "config", base_dir: str | os.PathLike | None = None
    ) -> RunConfig:
        """Build from a flat or sectioned mapping, refusing unknown keys and bad values;
        ``base_dir``: the folder relative task paths resolve against (``task_path``)."""
        flat = flatten(d, source)
        unknown = sorted(set(flat) - set(cls.keys()))
        if unknown:
            raise PipelineError(
                f"{source}: unknown key(s) {', '.join(unknown)}; known: {', '.join(cls.keys())}"
            )
        try:
            return cls(base_dir, **flat)
        except PipelineError as exc:
            raise PipelineError(str(exc).replace("config:", f"{source}:", 1)) from None

    @classmethod
    def from_toml(cls, path: str | os.PathLike) -> RunConfig:
        """Read a TOML file (flat keys, sections, or everything under a ``[run]`` table)."""
        path = Path(path)
        return cls.from_dict(read_toml(path), source=str(path), base_dir=path.resolve().parent)

    @property
    def base_dir(self) -> Path | None:
        """The folder of the config file it was read from (None: not read from a file)."""
        return self._base_dir

    def task_path(self, spec: str) -> str:
        """A task of ``tasks`` as loadable: a relative file path resolves against the config's
        folder (when the config came from a file and the task is there), else as given."""
        base = self.base_dir
        if base is None or spec in BUILTIN_TASKS or Path(spec).is_absolute():
            return spec
        there, file = base / spec, _file_of(spec)
        return str(there) if _exists(base / file) or not _exists(file) else spec

    def section(self, name: str) -> Section:
        """One section (``"model"``, ``"sweep"``...) as its own typed object."""
        cls = SECTIONS[name]
        return cls(**{k: getattr(self, k) for k in cls.model_fields})

    def resolved_ks(self, n_total_heads: int) -> list[int]:
        """``ks`` plus ``scaled_ks`` turned into head counts, sorted, unique; with ``heads`` and
        no ``ks`` given, their number."""
        if self.heads is not None and "ks" not in self.model_fields_set:
            return [len(self.heads)]
        extra = [max(1, round(f * n_total_heads)) for f in self.scaled_ks or []]
        ks = sorted(set(self.ks) | set(extra))
        check_ks(ks, n_total_heads)
        return ks

    def to_dict(self) -> dict:
        """Plain JSON-able values (enums as their strings), as in the TOML file; each section's
        variant options follow its last field."""
        fields = self.model_dump(mode="json")
        options = options_model()(**self.options()).model_dump(mode="json")
        out = {}
        for key, value in fields.items():
            out[key] = value
            for name, section in SECTIONS.items():
                if key == list(section.model_fields)[-1]:
                    out |= {n: options[n] for n in section_options(name)}
        return out

    def digest(self) -> str:
        """The run folder's ``config_digest`` (``config.digest``: the keys it leaves out)."""
        return digest_of(self.to_dict())


def _file_of(spec: str) -> Path:
    """The file a task spec reads: a CogQA spec's file without ``:Skill`` and ``@plain``."""
    from interp_heads.tasks.cogqa import is_cogqa, split_spec

    return split_spec(spec)[0] if is_cogqa(spec) else Path(spec)


def _exists(path: Path) -> bool:
    """Whether ``path`` exists; a name the file system cannot hold (too long) does not: the
    task loader then refuses it with one line."""
    try:
        return path.exists()
    except OSError:
        return False
