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

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from interp_heads.errors import PipelineError
from interp_heads.registry import Registry
from interp_heads.run.manifest import Manifest

SIZES = ("small", "full")
TASKS_SHORT = ["knowledge_recall", "math_calculation"]  # small sizes: the cheap built-in tasks


MAX_PARAM = 4096  # the longest --param value read (a path); a longer one is not a value


@dataclass(frozen=True)
class Param:
    """A study parameter's declaration: its ``default`` (None: needed) and ``kind`` (``str``,
    ``int`` within ``low..high``, or ``bool``). :meth:`parse` turns a ``--param`` text into that
    type or refuses it in one line, when the study is built: before any run."""

    default: Any = None
    kind: type = str
    low: int | None = None
    high: int | None = None

    def parse(self, study: str, name: str, value: Any) -> Any:
        """``value`` (text from ``--param``, or already typed from Python) as ``kind``."""
        bad = f"study {study}: --param {name}="
        if isinstance(value, int) and not isinstance(value, bool) and self.kind is int:
            value = str(value) if value.bit_length() < 64 else "<a number over 64 bits>"
        text = str(value).strip()
        if len(text) > MAX_PARAM or "\0" in text:
            raise PipelineError(f"{bad}<{len(text)} characters>: not a value (at most {MAX_PARAM})")
        shown = text if len(text) <= 40 else text[:37] + "..."
        if self.kind is bool:
            if isinstance(value, bool) or text.lower() in TRUE | FALSE:
                return value if isinstance(value, bool) else text.lower() in TRUE
            raise PipelineError(f"{bad}{shown!r}: expected true or false")
        if self.kind is int:
            if isinstance(value, bool) or not re.fullmatch(r"[+-]?[0-9]{1,18}", text):
                raise PipelineError(f"{bad}{shown!r}: expected a whole number")
            number = int(text)
            if (self.low is not None and number < self.low) or (
                self.high is not None and number > self.high
            ):
                raise PipelineError(f"{bad}{number}: expected {self.low}..{self.high}")
            return number
        if not isinstance(value, str):
            raise PipelineError(f"{bad}{shown!r}: expected text")
        return text


TRUE, FALSE = {"true", "1", "yes"}, {"false", "0", "no"}


def _declared(spec: Any) -> Param:
    """A ``params`` entry as a :class:`Param` (a plain default: text)."""
    return spec if isinstance(spec, Param) else Param(spec)


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


class Study:
    """A registered multi-run result. Subclasses set ``name`` and ``summary`` and define
    :meth:`runs` and :meth:`write_pages`; ``minutes`` holds the measured time per size
    (absent: not measured): ``full`` wall minutes on the 2-core reference machine, ``small``
    CPU minutes of one torch thread (user + sys: its wall time alone on one core, an upper bound
    on two)."""

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    minutes: ClassVar[dict[str, float]] = {}
    params: ClassVar[
        dict[str, Any]
    ] = {}  # the study's parameters: a default (None: needed) or a Param (typed, checked)

    @classmethod
    def build(cls, options, **params: Any) -> Study:
        """The study with its ``params`` (``STUDIES.build``; a study declares no options)."""
        return cls(**params)

    def __init__(self, **params: Any):
        unknown = sorted(set(params) - set(self.params))
        if unknown:
            known = ", ".join(self.params) or "none"
            raise PipelineError(f"study {self.name}: unknown parameter(s) {', '.join(unknown)}; "
                                f"known: {known}")  # fmt: skip
        specs = {k: _declared(v) for k, v in self.params.items()}
        given = {k: specs[k].parse(self.name, k, v) for k, v in params.items() if v is not None}
        defaults = {k: None if p.default is None else p.parse(self.name, k, p.default)
                    for k, p in specs.items()}  # fmt: skip
        self.values = {**defaults, **given}

    def param(self, name: str):
        """A parameter's value; a one-line error when a needed one was not given."""
        if self.values.get(name) is None:
            raise PipelineError(f"study {self.name} needs --param {name}=VALUE")
        return self.values[name]

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
        needed = [k for k, v in self.params.items() if _declared(v).default is None]
        if needed:
            sizes = "parameters " + ", ".join(f"{k}=..." for k in needed)
        else:
            sizes = ", ".join(
                f"{s}: {len(self.runs(s))} run(s), "
                + (f"{self.minutes[s]:g} min" if s in self.minutes else "not timed")
                for s in SIZES
            )
        return f"{self.name}: {self.summary} ({sizes})"


STUDIES: Registry[type[Study]] = Registry("study")


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
