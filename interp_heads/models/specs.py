"""A model by the spec a run or a command names: a model name, a folder, a GGUF file, or ``tiny``."""

from __future__ import annotations

from interp_heads.errors import PipelineError, one_line


def load_any_model(
    spec: str, device: str | None = None, n_devices: int = 1, backend: str = "hooked"
):
    """``load_model(spec)``; ``"tiny"`` is the backend's random test model (hidden, for tests).

    ``n_devices > 1`` splits the layers over that many GPUs (``load_model``); ``backend`` is a
    name in ``models.backends.BACKENDS`` (``load_model``'s): each backend builds its own tiny
    model (``Backend.tiny``; on the bridge a random Llama checkpoint of the tiny model's shapes).
    """
    from interp_heads.models.load import ModelLoadError, load_model

    if spec == "tiny" and n_devices == 1:
        from interp_heads.models.backends import get_backend
        from interp_heads.models.tl_compat import BackendError

        try:
            chosen = get_backend(backend)
            chosen.check_available()
            return chosen.tiny(device)
        except (BackendError, ModelLoadError) as exc:
            raise PipelineError(one_line(exc)) from None
    try:
        return load_model(spec, device=device, n_devices=n_devices, backend=backend)
    except ModelLoadError as exc:
        raise PipelineError(one_line(exc)) from None
