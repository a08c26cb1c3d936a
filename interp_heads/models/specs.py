"""A model by the spec a run or a command names: a model name, a folder, a GGUF file, or ``tiny``."""

from __future__ import annotations

from pathlib import Path

from interp_heads.errors import PipelineError, one_line
from interp_heads.models.sources import is_embedded

TINY = "tiny"  # the backend's random test model (``models.load.load_model``), exact spelling


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


def check_model_name(spec: str, backend: str = "hooked") -> None:
    """Refuse (``ModelLoadError``, one line) a spec the loader would refuse for its name alone:
    not the embedded model, ``tiny``, an existing path, nor a name the backend knows
    (``Backend.check_name``: the hooked backend's official names). A spec that passes may
    still fail to load (a damaged folder, no network)."""
    from interp_heads.models.backends import BACKENDS

    if is_embedded(spec) or spec == TINY:
        return
    try:
        if Path(spec).expanduser().exists():
            return
    except OSError:  # a name too long for the file system: not a path
        pass
    if backend in BACKENDS.names():  # an unknown backend is the config's error, said there
        BACKENDS.build(backend).check_name(spec)
