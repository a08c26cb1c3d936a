"""A study's runs on Ray: one task a run, wave after wave (``runner.waves``).

Each task runs the run's config through the pipeline in a Ray worker, in the driver's working
directory (configs and task files may be relative paths) with ``cpus_per_run`` torch threads
unless the config sets its own. Every run of a wave is waited for; the first failure then stops
the study with the run's folder named (the others' folders are complete or resumable).
"""

from __future__ import annotations

import os
from pathlib import Path

from interp_heads.errors import PipelineError


def _run_one(cwd: str, config, folder: str, steps: str, force: bool) -> str:
    """One study run in a Ray worker (the pipeline's own resume and locks apply)."""
    os.chdir(cwd)
    from interp_heads.pipeline.experiment import attribute_steps, run_experiment, run_pipeline

    if steps == "attribute":
        run_experiment(config, Path(folder), force=force, quiet=True, steps=attribute_steps())
    else:
        run_pipeline(config, Path(folder), force=force, quiet=True)
    return folder


def run_on_ray(configs, folders, waves, *, force=False, address=None, cpus_per_run=1) -> None:
    """Run ``configs`` (``[(StudyRun, RunConfig)]``) into ``folders`` wave by wave on Ray."""
    from interp_heads.execution.ray import WORKER_ENV, import_ray

    ray = import_ray()
    owns = not ray.is_initialized()
    if owns:
        ray.init(address=address, include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": WORKER_ENV})  # fmt: skip
    try:
        task = ray.remote(_run_one).options(num_cpus=cpus_per_run, max_retries=0)
        by_folder = {run.folder: config for run, config in configs}
        for wave in waves:
            refs = {}
            for run in wave:
                config = by_folder[run.folder]
                if config.threads is None:
                    config = config.changed({"threads": cpus_per_run})
                folder = str(Path(folders[run.folder]).resolve())
                refs[run.folder] = task.remote(os.getcwd(), config, folder, run.steps, force)
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
