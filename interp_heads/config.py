"""One description of a run: typed config sections, validated by pydantic, shared with the CLI.

A run's config (``RunConfig``) is the union of small typed sections, each usable alone:

=============== ===========================================================================
section         keys
=============== ===========================================================================
``model``       model, device, threads
``tasks``       tasks, max_examples, n_rank, n_eval, filter_correct, fmt
``attribution`` attribution, refine, exact_layers, verify
``ablation``    ablation, positions, scale_factor
``sweep``       ks, scaled_ks, selections, seeds, exclude_top
``generation``  max_new_tokens, batch_size, seed
``metrics``     metrics, comet_model
``placement``   executor, ray_address, n_workers, n_devices (where work runs; not in the digest)
=============== ===========================================================================

A TOML file may be flat (``ks = [16, 32]``, as all configs so far), sectioned (``[sweep]
ks = [16, 32]``) or under one ``[run]`` table. Unknown keys, keys in the wrong section and bad
values raise :class:`~interp_heads.errors.PipelineError` with one line. The CLI builds its
flags for the same settings from these fields (``cli_flag``): type, default, choices and help
come from here, so they cannot drift apart.
"""

from __future__ import annotations

import os
import tomllib
import typing
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PrivateAttr, ValidationError

from interp_heads.errors import PipelineError
from interp_heads.runfolder import config_digest
from interp_heads.tasks.schema import BUILTIN_TASKS
from interp_heads.vocab import (
    SCALE_FACTOR,
    AblationKind,
    AttributionMethod,
    MaskPositions,
    MetricName,
    PromptFormat,
    Selection,
    _Choice,
)


def _parsed(enum):
    return BeforeValidator(lambda v: enum.parse(v) if isinstance(v, str) else v)


Pos = Annotated[int, Field(gt=0)]
MAX_SEEDS = 1000  # random draws per selection and k; more is a typo, not an experiment
NonNeg = Annotated[int, Field(ge=0)]
Fraction = Annotated[float, Field(gt=0, le=1)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True, strict=True)


class ModelSection(_Section):
    model: str = Field(
        "smollm2-135m", min_length=1, description="model spec (smollm2-135m: the embedded SmolLM2)"
    )
    device: str | None = Field(None, description="cpu, cuda, cuda:N, mps (None: CUDA when present)")
    threads: Pos | None = Field(
        None, description="torch CPU threads (None: cores shared among running interp-heads)"
    )
    backend: Literal["hooked", "bridge"] = Field(
        "hooked",
        description="hooked (HookedTransformer, TransformerLens 2.18) or bridge "
        "(TransformerBridge around the HF model, TransformerLens 4: make setup-tl4)",
    )


class PlacementSection(_Section):
    """Where work runs, not what it computes: not part of the config digest."""

    executor: Literal["local", "ray"] = Field(
        "local", description="where the sweep's generations run: this process or Ray actors"
    )
    ray_address: str | None = Field(
        None, description="Ray cluster to join (None: $RAY_ADDRESS, else a local Ray instance)"
    )
    n_workers: Pos | None = Field(None, description="Ray actors (None: one per GPU, else CPU)")
    n_devices: Pos = Field(1, description="GPUs the model's layers are split over")


class TasksSection(_Section):
    tasks: list[str] = Field(
        default_factory=lambda: list(BUILTIN_TASKS),
        min_length=1,
        description="built-in task names or task JSONL files",
    )
    max_examples: Pos | None = Field(None, description="read at most N examples per task")
    n_rank: Pos = Field(24, description="rank on the first N correctly answered examples")
    n_eval: Pos = Field(100, description="evaluate at most N (correctly answered) examples")
    filter_correct: bool = Field(True, description="keep only correctly answered examples")
    fmt: Annotated[PromptFormat, _parsed(PromptFormat)] | None = Field(
        None, description="prompt format (None: the task's own, else measured)"
    )


class AttributionSection(_Section):
    attribution: Annotated[AttributionMethod, _parsed(AttributionMethod)] = Field(
        AttributionMethod.AUTO,
        description="auto (atp with corrupted prompts, else ablation_atp), exact, atp, "
        "ablation_atp, gradxact, headmask or mean_ablation",
    )
    refine: Pos | None = Field(None, description="re-score the top N heads exactly")
    exact_layers: NonNeg | None = Field(
        None,
        description="ablation_atp: score the first N layers' heads by exact mean ablation "
        "(None: 1 with mean ablation, else 0)",
    )
    verify: NonNeg = Field(
        8,
        description="check the ranking's top N heads and N random others by their exact "
        "mean-ablation drop; the verdict goes to the manifest and the report (0: off)",
    )


class AblationSection(_Section):
    ablation: Annotated[AblationKind, _parsed(AblationKind)] = Field(
        AblationKind.MEAN,
        description="ablation kind: what a masked head's hook_z becomes (zero, mean, resample, "
        "scale)",
    )
    positions: Annotated[MaskPositions, _parsed(MaskPositions)] = Field(
        MaskPositions.ALL,
        description="where the mask acts: all positions, or last (position -1 of each forward "
        "pass: the last prompt token, then every generated token)",
    )
    scale_factor: float = Field(
        SCALE_FACTOR, description="ablation 'scale': what a masked head's hook_z is multiplied by"
    )


class SweepSection(_Section):
    ks: list[Pos] = Field(
        default_factory=lambda: [16, 32, 64, 128],
        min_length=1,
        description="numbers of masked heads",
    )
    scaled_ks: list[Fraction] | None = Field(
        None, description="fractions of all heads, added to ks"
    )
    selections: list[Annotated[Selection, _parsed(Selection)]] = Field(
        default_factory=lambda: [Selection.TOPK, Selection.RANDOMK, Selection.LAYERMATCHED],
        min_length=1,
        description="topk, randomk, layermatched",
    )
    seeds: Pos = Field(5, le=MAX_SEEDS, description="random draws per random selection and k")
    exclude_top: bool = Field(
        False,
        description="RandomK draws only heads outside the TopK set of the same k (the control of "
        "Wu et al. 2024: random non-retrieval heads)",
    )


class GenerationSection(_Section):
    max_new_tokens: Pos = Field(16, description="tokens generated per answer")
    batch_size: Pos = Field(16, description="examples per forward pass")
    seed: int = Field(0, description="torch seed set before the run")


class MetricsSection(_Section):
    metrics: list[Annotated[MetricName, _parsed(MetricName)]] = Field(
        default_factory=lambda: [MetricName.ACCURACY, MetricName.COMET],
        min_length=1,
        description="accuracy, comet, chrf, minilm_cosine, bleu_rouge_cosine",
    )
    comet_model: str | None = Field(None, description="COMET checkpoint name or path")


SECTIONS: dict[str, type[_Section]] = {
    "model": ModelSection,
    "tasks": TasksSection,
    "attribution": AttributionSection,
    "ablation": AblationSection,
    "sweep": SweepSection,
    "generation": GenerationSection,
    "metrics": MetricsSection,
    "placement": PlacementSection,
}
# speed, placement and checks only: the results do not depend on them (``verify`` adds a check of
# the ranking and changes no result table)
NOT_IN_DIGEST = {"threads", "verify", *PlacementSection.model_fields}
# Keys added after run folders existed: left out of the digest at their default value, so that
# those folders keep resuming (a non-default value is a different config).
DIGEST_IF_SET = {
    "exclude_top": False,
    "exact_layers": None,
    "positions": "all",
    "scale_factor": SCALE_FACTOR,
    "backend": "hooked",
}


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
        from interp_heads import validation

        validation.check_device(self.device)
        if self.exact_layers and (
            self.attribution not in ("ablation_atp", "auto") or self.ablation != "mean"
        ):
            raise PipelineError(
                f"config: exact_layers={self.exact_layers} scores heads by exact mean ablation: "
                "it needs attribution 'ablation_atp' (or 'auto') and ablation 'mean'"
            )

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

    def validate(self, n_total_heads: int | None = None) -> None:
        """Check what needs the model: every k (and scaled k) fits its number of heads."""
        if n_total_heads is not None:
            self.resolved_ks(n_total_heads)

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


def cli_flag(parser, field: str, *flags: str, **overrides) -> None:
    """Add ``--field-name`` for a config field, with its type, default, choices and help."""
    from interp_heads import validation

    info = RunConfig.model_fields[field]
    kwargs: dict = {
        "default": info.get_default(call_default_factory=True),
        "help": info.description,
    }
    enum = _enum_of(info.annotation)
    literal = next((a for a in _walk(info.annotation) if typing.get_origin(a) is Literal), None)
    if enum is not None:
        kwargs["choices"] = list(enum.values())
    elif literal is not None:
        kwargs["choices"] = list(typing.get_args(literal))
    elif _positive(info):
        hi = next((a.le for a in info.metadata if getattr(a, "le", None) is not None), None)
        kwargs["type"] = validation.positive_int if hi is None else validation.bounded_int(hi)
    elif _non_negative(info):
        kwargs["type"] = validation.non_negative_int
    kwargs.update(overrides)
    if isinstance(kwargs.get("default"), list):
        kwargs["default"] = [str(v) for v in kwargs["default"]]
    elif kwargs.get("default") is not None and enum is not None:
        kwargs["default"] = str(kwargs["default"])
    parser.add_argument(*(flags or ("--" + field.replace("_", "-"),)), **kwargs)


def _walk(annotation):
    yield annotation
    yield from getattr(annotation, "metadata", ())  # a FieldInfo inside Annotated[...]
    for arg in typing.get_args(annotation):
        yield from _walk(arg)


def _enum_of(annotation):
    return next(
        (a for a in _walk(annotation) if isinstance(a, type) and issubclass(a, _Choice)), None
    )


def _non_negative(info) -> bool:
    """Whether a field is constrained ``>= 0`` (``NonNeg``, also inside ``NonNeg | None``)."""
    return any(getattr(a, "ge", None) == 0 for a in (*info.metadata, *_walk(info.annotation)))


def _positive(info) -> bool:
    """Whether a field is constrained ``> 0`` (``Pos``, also inside ``Pos | None``)."""
    return any(getattr(a, "gt", None) == 0 for a in (*info.metadata, *_walk(info.annotation)))
