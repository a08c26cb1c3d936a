"""Whole runs on an executor: a study's runs one after another in this process, or one Ray task a
run, wave after wave (a run after the runs whose folders it reads).

A registered executor (``execution.registry.EXECUTORS``) that can run whole runs says so with a
``run_runs(runs, run_one)`` static method (``execution.builtin``: ``local`` and ``ray``); the study
runner resolves ``--executor`` through the registry and calls it. ``run_one(config, folder, steps,
force, quiet)`` runs one run through the pipeline: the caller's (``studies.runner.run_one``), so this
layer runs runs without knowing the pipeline.

On Ray, each task runs one run's config in a Ray worker, in the driver's working directory
(configs and task files may be relative paths) with ``cpus_per_run`` torch threads unless the
config sets its own. Every run of a wave is waited for; the first failure then stops the study
with the run's folder named (the others' folders are complete or resumable).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from interp_heads.errors import PipelineError

RunOne = Callable[[Any, Path, str, bool, bool], Any]  # (config, folder, steps, force, quiet)


@dataclass(frozen=True)
class RunJob:
    """One whole run: its ``name`` (its folder under the runs folder), its ``config`` (a
    ``RunConfig``), the ``folder`` it writes and its ``steps`` (``"run"`` or ``"attribute"``)."""

    name: str
    config: Any
    folder: Path
    steps: str = "run"


@dataclass(frozen=True)
class Runs:
    """What an executor's ``run_runs`` is given: the ``jobs`` in the study's order, the same jobs
    in ``waves`` (a job only after the jobs whose folders it reads; a wave's jobs may run at
    once), ``force`` and ``quiet`` for every run, and where they go (``address``: a Ray cluster,
    None for a local one; ``cpus_per_run``: CPUs and torch threads of each Ray task)."""

    jobs: tuple[RunJob, ...]
    waves: tuple[tuple[RunJob, ...], ...]
    force: bool = False
    quiet: bool = False
    address: str | None = None
    cpus_per_run: int = 1


def run_in_process(runs: Runs, run_one: RunOne) -> None:
    """Every job, one after another, in this process (the study's order)."""
    for job in runs.jobs:
        run_one(job.config, job.folder, job.steps, runs.force, runs.quiet)


def _run_one(cwd: str, run_one: RunOne, config, folder: str, steps: str, force: bool) -> str:
    """One run in a Ray worker (the pipeline's own resume and locks apply)."""
    os.chdir(cwd)
    run_one(config, Path(folder), steps, force, True)
    return folder


def run_on_ray(runs: Runs, run_one: RunOne) -> None:
    """Every job as one Ray task, wave by wave."""
    from interp_heads.execution.ray import WORKER_ENV, import_ray

    ray = import_ray()
    owns = not ray.is_initialized()
    if owns:
        ray.init(address=runs.address, include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": WORKER_ENV})  # fmt: skip
    try:
        task = ray.remote(_run_one).options(num_cpus=runs.cpus_per_run, max_retries=0)
        for wave in runs.waves:
            refs = {}
            for job in wave:
                config = job.config
                if config.threads is None:
                    config = config.changed({"threads": runs.cpus_per_run})
                folder = str(Path(job.folder).resolve())
                refs[job.name] = task.remote(os.getcwd(), run_one, config, folder, job.steps,
                                             runs.force)  # fmt: skip
            failed = []
            for name, ref in refs.items():
                try:
                    ray.get(ref)
                except Exception as exc:  # a RayTaskError wraps the run's own error
                    cause = getattr(exc, "cause", None) or exc
                    failed.append(f"study run {name}: {type(cause).__name__}: {cause}")
            if failed:
                raise PipelineError(failed[0].splitlines()[0])
    finally:
        if owns:
            ray.shutdown()
