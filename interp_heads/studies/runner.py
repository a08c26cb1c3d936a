"""Run a study: each of its runs through the pipeline (resumed where a folder holds it), then
its pages from the run folders. A run that fails stops the study; rerunning resumes it.

Every run of a study reads and writes one shared generation store, ``<runs>/shared``
(:data:`SHARED`, ``store.shared``): a condition that another run (of this study, of another study
under the same runs folder, or of an earlier call) generated under the same key is read back, not
generated again."""

from __future__ import annotations

from pathlib import Path

from interp_heads.config.run_config import RunConfig
from interp_heads.errors import PipelineError
from interp_heads.execution.whole_runs import RunJob, Runs
from interp_heads.studies.base import SIZES, STUDIES, Study, StudyContext, StudyRun

SHARED = "shared"  # the runs folder's shared generation store (no run folder may be named so)


def study_config(
    run: StudyRun, runs_dir: str | Path = "runs", threads: int | None = None
) -> RunConfig:
    """The run's config: its TOML (or mapping) with the study's changes (and ``threads``) on top;
    ``{runs}`` in a changed text value is the runs folder (a run that reads another's ranking)."""
    changes = {
        k: v.replace("{runs}", Path(runs_dir).as_posix()) if isinstance(v, str) else v
        for k, v in run.changes.items()
    }
    if isinstance(run.config, dict):
        config = RunConfig.from_dict({**run.config, **changes}, source=f"study run {run.folder}")
    else:
        config = RunConfig.from_toml(run.config)
        if changes:
            config = config.changed(changes, source=f"{run.config} (study run {run.folder})")
    if threads is not None:
        config = config.changed({"threads": threads})
    return config


def get_study(name: str, **params) -> Study:
    """The registered study ``name`` with ``params`` (one-line error listing the others)."""
    return STUDIES.build(name, None, StudyContext(params))


def run_study(
    name: str | Study,
    runs_dir: str | Path = "runs",
    *,
    size: str = "full",
    docs: str | Path | None = None,
    threads: int | None = None,
    force: bool = False,
    quiet: bool = False,
    params: dict | None = None,
    shared: bool = True,
    executor: str = "local",
    ray_address: str | None = None,
    cpus_per_run: int = 1,
) -> list[Path]:
    """Run or resume every run of study ``name`` (with ``params``) at ``size`` under
    ``runs_dir``, then write its pages into ``docs`` (None: :func:`pages_folder`); returns the
    pages written. Every run's folder, tasks and model name are checked before torch loads. At
    the small size a run's baseline answers only the rows it ranks and evaluates (``baseline =
    "needed"``: the same rows, no ``baseline.csv``) unless the study sets ``baseline``.
    ``shared``:
    the runs share generations through ``<runs_dir>/shared`` (False: each generates its own).
    ``executor``: a registered executor that runs whole runs (:func:`study_executor`): ``local``
    (one run after another, in this process) or ``ray`` (one Ray task a run, ``cpus_per_run``
    CPUs and torch threads each, on the cluster at ``ray_address`` or a local one; runs that read
    another's folder wait for it: :func:`waves`)."""
    from interp_heads.pipeline.inputs import check_inputs

    study = get_study(name, **(params or {})) if isinstance(name, str) else name
    if size not in SIZES:
        raise PipelineError(f"study size {size!r}: choose one of {', '.join(SIZES)}")
    run_runs = study_executor(executor)  # before any run
    docs = pages_folder(study.name, size, runs_dir) if docs is None else docs
    runs = study.runs(size)
    mine = [run.folder for run in runs] + list(study.folders_here(size))
    check_folders(runs_dir, mine, docs, shared and bool(runs))  # before any run
    here = study.run_here(size, Path(runs_dir), force=force, quiet=quiet)
    if here is not None:
        return study.write_pages(here, Path(docs))
    configs = [
        (run, study_config(run, runs_dir, threads)) for run in runs
    ]  # every config checked first
    configs = [  # at the small sizes, answer rows only until those it ranks and evaluates
        (run, config.changed({"baseline": "needed"}))
        if size != "full" and "baseline" not in run.changes
        else (run, config)
        for run, config in configs
    ]
    for run, config in configs:  # no torch yet: a bad input is one line in a fraction of a second
        check_inputs(config, Path(runs_dir) / run.folder, force, ranking=False)
    if any(Path(run.folder).parts[:1] == (SHARED,) for run in runs):
        raise PipelineError(
            f"study {study.name}: a run folder is named {SHARED!r}, the shared store's"
        )
    configs = [
        (run, config.changed({"shared_store": str(Path(runs_dir) / SHARED)}))
        if shared and config.shared_store is None
        else (run, config)
        for run, config in configs
    ]
    folders = {run.folder: Path(runs_dir) / run.folder for run in runs}
    jobs = {run.folder: RunJob(run.folder, config, folders[run.folder], run.steps)
            for run, config in configs}  # fmt: skip
    run_runs(
        Runs(tuple(jobs.values()), tuple(tuple(jobs[r.folder] for r in w) for w in waves(runs)),
             force=force, quiet=quiet, address=ray_address, cpus_per_run=cpus_per_run),
        run_one,
    )  # fmt: skip
    return study.write_pages(folders, Path(docs))


def study_executor(name: str):
    """The ``run_runs`` of the executor ``name`` registers (``EXECUTORS``: any spelling it
    accepts, a user's own executor too): how a study's whole runs are run. A name that is not
    registered, or an executor without ``run_runs`` (``plain``, ``packed``: a sweep's only), is
    one line naming those that have one."""
    from interp_heads.execution.registry import EXECUTORS

    able = [c.name for c in EXECUTORS.classes() if callable(getattr(c, "run_runs", None))]
    found = EXECUTORS.get(name) if name in EXECUTORS else None
    if found is None or not callable(getattr(found, "run_runs", None)):
        choices = " or ".join(able) if len(able) <= 2 else ", ".join(able)
        raise PipelineError(f"study executor {name!r}: choose {choices}")
    return found.run_runs


def run_one(config, folder: Path, steps: str, force: bool, quiet: bool) -> str:
    """One study run through the pipeline (``steps``: ``"attribute"`` ranks only), in this
    process or in a Ray worker: what an executor's ``run_runs`` calls for each run."""
    from interp_heads.pipeline.experiment import attribute_steps, run_experiment, run_pipeline

    if steps == "attribute":
        run_experiment(config, Path(folder), force=force, quiet=quiet, steps=attribute_steps())
    else:
        run_pipeline(config, Path(folder), force=force, quiet=quiet)
    return str(folder)


def check_folders(runs_dir, folders: list[str], docs, shared: bool = True) -> None:
    """Refuse, before any run, a study whose folders would take a write elsewhere: a run folder
    (``<runs>/claim/mean_all``) or the shared store reached through a symbolic link below
    ``runs_dir``, a shared store that is not a folder, or a ``docs`` that is a file or a link."""
    from interp_heads.store.files import first_link, linked_folders
    from interp_heads.store.layout import SUBFOLDERS
    from interp_heads.store.pages import check_docs
    from interp_heads.store.shared import GENERATIONS, VALUES, not_a_folder

    runs_dir = Path(runs_dir)
    if runs_dir.exists() and not runs_dir.is_dir():
        raise PipelineError(f"--runs {str(runs_dir)!r} exists and is not a folder")
    for folder in [*folders, *([SHARED] if shared else [])]:
        link = first_link(runs_dir, runs_dir / folder)
        inner = SUBFOLDERS if folder != SHARED else (GENERATIONS, VALUES)
        link = link or next(iter(linked_folders(runs_dir / folder, inner)), None)
        if link is not None:
            raise PipelineError(f"{str(link)!r} is a symbolic link; a study writes its runs "
                                "only into real folders under --runs")  # fmt: skip
    if shared and (problem := not_a_folder(runs_dir / SHARED)) is not None:
        raise PipelineError(f"{str(runs_dir / SHARED)!r} is {problem}; the shared store "
                            "must be a real folder")  # fmt: skip
    check_docs(docs)
    if (Path(docs) / "figures").is_symlink():
        raise PipelineError(f"{str(Path(docs) / 'figures')!r} is a symbolic link; a study's "
                            "figures go into a real folder")  # fmt: skip


def pages_folder(name: str, size: str, runs_dir: str | Path = "runs") -> Path:
    """Where a study's pages go when no folder is given: ``docs/`` for the full size (the
    committed pages), ``<runs>/<name>-small/docs`` for the small one, so a try never writes
    small-size numbers over the committed pages."""
    return Path("docs") if size == "full" else Path(runs_dir) / f"{name}-{size}" / "docs"


def waves(runs: list[StudyRun]) -> list[list[StudyRun]]:
    """The runs grouped by what they read: a run whose changes name another run's folder
    (``{runs}/<folder>``, e.g. a ranking) comes in a later wave than that run; a wave's runs can
    run at once."""
    folders = [r.folder for r in runs]
    needs = {
        r.folder: {f for v in r.changes.values() if isinstance(v, str) for f in folders
                   if v == f"{{runs}}/{f}" or v.startswith(f"{{runs}}/{f}/")} - {r.folder}
        for r in runs
    }  # fmt: skip
    done: set[str] = set()
    out, left = [], list(runs)
    while left:
        wave = [r for r in left if needs[r.folder] <= done]
        if not wave:
            names = ", ".join(r.folder for r in left)
            raise PipelineError(f"study runs read each other's folders in a circle: {names}")
        out.append(wave)
        done |= {r.folder for r in wave}
        left = [r for r in left if r.folder not in done]
    return out
