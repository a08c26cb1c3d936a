"""Run inputs and outputs: one-line input errors, model/task loading, atomic writes, provenance."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
from pathlib import Path

from interp_heads import runfolder
from interp_heads.tasks.schema import Task

ROOT = Path(__file__).resolve().parents[1]


class PipelineError(ValueError):
    """A bad input (config, task, model, folder); the message is one line naming the problem."""


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file, ``fsync`` and a rename."""
    runfolder.write_atomic(path, text)


def versions() -> dict[str, str]:
    out = {}
    for pkg in (
        "interp_heads",
        "torch",
        "transformer-lens",
        "transformers",
        "plotly",
        "pandas",
        "numpy",
        "unbabel-comet",
    ):
        try:
            out[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            out[pkg] = "absent"
    return out


def git_hash() -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def prepare_out_dir(out_dir: Path, digest: str, force: bool) -> None:
    """Create ``out_dir``, take its lock, refuse a folder holding another run's config (unless ``force``).

    The lock (``runfolder.acquire``) is held until the enclosing ``runfolder.held_locks`` ends.
    A damaged ``manifest.json`` is reported and treated as absent: the resume keys of every
    stored unit keep its results from being reused under other inputs.
    """
    manifest = out_dir / "manifest.json"
    if out_dir.exists() and not out_dir.is_dir():
        raise PipelineError(f"output {str(out_dir)!r} exists and is not a directory")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        probe = out_dir / f".write-probe-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise PipelineError(
            f"output directory {str(out_dir)!r} is not writable ({exc.strerror or exc})"
        ) from None
    try:
        runfolder.acquire(out_dir)
    except runfolder.RunFolderBusy as exc:
        raise PipelineError(str(exc)) from None
    if manifest.exists():
        entry = runfolder.read_entry(manifest, {"config_digest": str}, checksum=False)
        theirs = entry.get("config_digest") if entry else None
        if entry is not None and theirs != digest and not force:
            raise PipelineError(
                f"{str(out_dir)!r} holds a run with a different config; use --force or another --out"
            )


def load_any_model(spec: str, device: str | None = None, n_devices: int = 1):
    """``load_model(spec)``; ``"tiny"`` is the random test model (hidden, for tests), on ``device`` too.

    The tiny model is built on the CPU and then moved, so its weights do not depend on the device.
    ``n_devices > 1`` splits the layers over that many GPUs (``load_model``).
    """
    if spec == "tiny" and n_devices == 1:
        from interp_heads.testing import tiny_model

        model = tiny_model()
        if device is not None:
            model.to(device, print_details=False)
        model.interp_heads_source = {"spec": "tiny", "sha256": None}
        return model
    from interp_heads.models import ModelLoadError, load_model

    try:
        return load_model(spec, device=device, n_devices=n_devices)
    except ModelLoadError as exc:
        raise PipelineError(str(exc).splitlines()[0]) from None


def load_any_task(name_or_path: str) -> Task:
    """A built-in task by name or a task JSONL file (via ``interp_heads.tasks.load_task``)."""
    from interp_heads.tasks import load_task

    try:
        task = load_task(name_or_path)
    except (FileNotFoundError, KeyError) as exc:
        raise PipelineError(f"unknown task {name_or_path!r} ({exc})") from None
    except (ValueError, TypeError, json.JSONDecodeError) as exc:
        if isinstance(exc, PipelineError):
            raise
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise PipelineError(f"task {name_or_path!r}: {msg}") from None
    if len(task) == 0:
        raise PipelineError(f"task {name_or_path!r} has no examples")
    return task
