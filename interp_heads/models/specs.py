"""A model by the spec a run or a command names: a model name, a folder, a GGUF file, or ``tiny``."""

from __future__ import annotations

from interp_heads.errors import PipelineError, one_line


def load_any_model(
    spec: str, device: str | None = None, n_devices: int = 1, backend: str = "hooked"
):
    """``load_model(spec)`` with its refusals as one-line ``PipelineError``s (the CLI's exit 2);
    ``"tiny"`` is the backend's random test model (``Backend.tiny``; on the bridge a random Llama
    checkpoint of the tiny model's shapes). Threads are left to the caller (a command sets
    them from ``--threads`` before, and watches the model after)."""
    from interp_heads.models.load import ModelLoadError, load_model

    try:
        return load_model(spec, device=device, n_devices=n_devices, backend=backend, threads=None)
    except ModelLoadError as exc:
        raise PipelineError(one_line(exc)) from None
