"""Loading what a run names: one-line input errors (``PipelineError``), models and tasks by spec."""

from __future__ import annotations

import json

from interp_heads.errors import PipelineError
from interp_heads.tasks.schema import Task

__all__ = ["PipelineError", "load_any_model", "load_any_task"]


def load_any_model(
    spec: str, device: str | None = None, n_devices: int = 1, backend: str = "hooked"
):
    """``load_model(spec)``; ``"tiny"`` is the random test model (hidden, for tests), on ``device`` too.

    The tiny model is built on the CPU and then moved, so its weights do not depend on the device.
    ``n_devices > 1`` splits the layers over that many GPUs (``load_model``); ``backend`` is
    ``load_model``'s (the tiny model is hooked only).
    """
    if spec == "tiny" and n_devices == 1 and backend == "hooked":
        from interp_heads.testing import tiny_model

        model = tiny_model()
        if device is not None:
            model.to(device, print_details=False)
        model.interp_heads_source = {"spec": "tiny", "sha256": None}
        return model
    from interp_heads.models import ModelLoadError, load_model

    try:
        return load_model(spec, device=device, n_devices=n_devices, backend=backend)
    except ModelLoadError as exc:
        raise PipelineError(str(exc).splitlines()[0]) from None


def load_any_task(name_or_path: str) -> Task:
    """A built-in task by name or a task JSONL file (via ``interp_heads.tasks.load_task``)."""
    from interp_heads.tasks import load_task

    try:
        task = load_task(name_or_path)
    except (FileNotFoundError, KeyError) as exc:
        raise PipelineError(f"unknown task {name_or_path!r} ({exc})") from None
    except OSError as exc:  # a name too long for the file system, a permission: unusable input
        raise PipelineError(f"task {name_or_path!r}: cannot read ({exc.strerror or exc})") from None
    except (ValueError, TypeError, json.JSONDecodeError) as exc:
        if isinstance(exc, PipelineError):
            raise
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise PipelineError(f"task {name_or_path!r}: {msg}") from None
    if len(task) == 0:
        raise PipelineError(f"task {name_or_path!r} has no examples")
    return task
