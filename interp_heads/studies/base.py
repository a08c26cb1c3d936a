"""What a study is: a result made of several runs, declared in one file and registered once.

A study names its runs (a config each, with the values this study changes), says how to size them
(``small``: minutes, to try it; ``full``: the measured result) and writes its pages only from the
run folders (``run.Run``, or ``load_run`` over it), never from a model: circuit-tracer's one
artefact per result plus a page that reads many. ``interp-heads study NAME`` runs or resumes each run through the pipeline,
then writes the pages; a second call resumes and rewrites the pages from the same folders::

    @STUDIES.register
    class TwoModels(Study):
        name = "two_models"
        summary = "the Cognitive Mirrors figure for two models on one page"

        def runs(self, size):
            return [StudyRun(m, "configs/seed_figure.toml", {"model": m}) for m in ("a", "b")]

        def write_pages(self, folders, docs):
            ...
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar

from interp_heads.errors import PipelineError
from interp_heads.registry import Registry
from interp_heads.run.manifest import Manifest
from interp_heads.studies.options import needed, option_help, option_kinds, parse_options

SIZES = ("small", "full")
TASKS_SHORT = ["knowledge_recall", "math_calculation"]  # small sizes: the cheap built-in tasks


@dataclass(frozen=True)
class StudyRun:
    """One run of a study: its folder (relative to the runs folder, ``runs/`` by default), the
    TOML config it starts from (a path, relative to the working directory, or a mapping), the
    values this study changes in it and its ``steps``: ``"run"`` (the whole pipeline) or
    ``"attribute"`` (rank the heads only: a ranking other runs are given)."""

    folder: str
    config: str | dict
    changes: dict[str, Any] = field(default_factory=dict)
    steps: str = "run"


@dataclass(frozen=True)
class StudyContext:
    """What every study is built with (``STUDIES.build``): its parameters as given
    (``--param KEY=VALUE``; each parsed by the study), held read-only."""

    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))


class Study:
    """A registered multi-run result. Subclasses set ``name`` and ``summary`` and define
    :meth:`runs` and :meth:`write_pages`; ``minutes`` holds the measured time per size
    (absent: not measured): ``full`` wall minutes on the 2-core reference machine, ``small``
    CPU minutes of one torch thread (user + sys: its wall time alone on one core, an upper bound
    on two). A study with options declares them in its frozen ``Options`` dataclass (as every
    registered variant does); ``params`` is the built study's ``Options``, from ``--param``."""

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    minutes: ClassVar[dict[str, float]] = {}

    @dataclass(frozen=True)
    class Options:
        """The study's options (``--param KEY=VALUE``, ``studies.options``): none here; a study
        with options declares its own frozen dataclass of typed fields, each with a default
        (None: needed) and a ``help`` text."""

    @classmethod
    def build(cls, options, ctx: StudyContext) -> Study:
        """The study with the parameters ``ctx`` holds (``STUDIES.build``: ``options`` is its
        ``Options`` at the defaults, or as a caller built them), each typed and checked on top of
        ``options``."""
        return cls(options, **ctx.params)

    def __init__(self, options=None, /, **params: Any):
        self.params = parse_options(self.name, type(self).Options, params, options)

    def param(self, name: str):
        """An option's value; a one-line error when a needed one was not given."""
        value = getattr(self.params, name)
        if value is None:
            about = option_help(type(self).Options, name)
            raise PipelineError(f"study {self.name} needs --param {name}=VALUE"
                                + (f" ({about})" if about else ""))  # fmt: skip
        return value

    def runs(self, size: str) -> list[StudyRun]:
        """The runs at ``size`` (one of :data:`SIZES`)."""
        raise NotImplementedError

    def folders_here(self, size: str) -> list[str]:
        """The folders (under the runs folder) that :meth:`run_here` writes at ``size``: checked
        before it runs as a pipeline run's folder is (no link at any depth)."""
        return []

    def run_here(self, size: str, runs_dir: Path, *, force: bool = False,
                 quiet: bool = False) -> dict[str, Path] | None:  # fmt: skip
        """A study that does its work in this process instead of through pipeline runs does it
        here and returns its folders (``{name: path}``) for :meth:`write_pages`; None (the
        default): the study is its :meth:`runs`."""
        return None

    def write_pages(self, folders: dict[str, Path], docs: Path) -> list[Path]:
        """Write the study's pages from its finished run folders (``{run.folder: path}``) into
        the docs folder ``docs``; returns the files written."""
        raise NotImplementedError

    def describe(self) -> str:
        """One line for ``interp-heads study --list``."""
        wanted = needed(type(self).Options)
        if wanted:
            sizes = "parameters " + ", ".join(f"{k}=..." for k in wanted)
        else:
            sizes = ", ".join(
                f"{s}: {len(self.runs(s))} run(s), "
                + (f"{self.minutes[s]:g} min" if s in self.minutes else "not timed")
                for s in SIZES
            )
        return f"{self.name}: {self.summary} ({sizes})"


class StudyRegistry(Registry):
    """The study registry: a study's ``Options`` are its own ``--param`` keys, not options
    shared across the registered classes (no config section reads them), so two studies may
    declare one name with different defaults (``k``)."""

    def own_options(self, cls) -> tuple:
        return ()

    def register(self, cls=None, *, replace: bool = False):
        """``Registry.register``, once the study's ``Options`` fields are of a type ``--param``
        can give (``studies.options.option_kinds``: a TypeError at import, not at a user's run)."""
        if cls is not None:
            option_kinds(cls.Options)
        return super().register(cls, replace=replace)


STUDIES: Registry[type[Study]] = StudyRegistry("study", context=StudyContext)


def repo_file(spec: str | Path) -> Path:
    """The file ``spec`` names: from the working folder when it is absolute or there, else the
    repository's (a study's configs and task files from any working folder), else as given."""
    here, repo = Path(spec), Path(__file__).resolve().parents[2] / spec
    return here if here.is_absolute() or here.exists() or not repo.exists() else repo


def run_minutes(manifest: Manifest | dict, step: str = "total") -> tuple[float | None, int]:
    """Minutes a run folder's ``step`` took over every invocation of its config (a resumed run
    records its earlier invocations in ``earlier_timings``), and how many invocations there were.
    ``None`` when no invocation timed that step."""
    manifest = Manifest.of(manifest)
    history = [t for t in manifest.earlier_timings or [] if isinstance(t, dict)]
    spent = [t.get(step) for t in history + [manifest.timings or {}]]
    spent = [s for s in spent if isinstance(s, int | float)]
    return (sum(spent) / 60 if spent else None), len(history) + 1


def read_scores(path: Path):
    """A run folder's stored ranking (``attribution/<task>.json``) as ``HeadScores``, through
    the one reader of rankings (``run.Run.scores_entry``: a plain file, its checksum dropped).

    Raises:
        FileNotFoundError: no such entry.
    """
    from interp_heads.run import Run

    scores = Run.scores_entry(path)
    if scores is None:
        raise FileNotFoundError(2, "no stored ranking", str(path))
    return scores
