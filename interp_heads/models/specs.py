"""A model by the spec a run or a command names: a model name, a folder, a GGUF file, or ``tiny``."""

from __future__ import annotations

from interp_heads.errors import PipelineError, one_line


def load_any_model(
    spec: str, device: str | None = None, n_devices: int = 1, backend: str = "hooked"
):
    """``load_model(spec)``; ``"tiny"`` is the random test model (hidden, for tests), on ``device`` too.

    The tiny model is built on the CPU and then moved, so its weights do not depend on the device.
    ``n_devices > 1`` splits the layers over that many GPUs (``load_model``); ``backend`` is
    ``load_model``'s (the tiny model on the bridge is a random Llama checkpoint of its shapes).
    A device this machine does not have is a one-line PipelineError, as on the command line.
    """
    from interp_heads.models.devices import check_device

    check_device(device, allow_meta=True)
    if spec == "tiny" and n_devices == 1 and backend == "bridge":
        from interp_heads.models.tiny import tiny_bridge_model

        return tiny_bridge_model(device=device or "cpu")
    if spec == "tiny" and n_devices == 1 and backend == "hooked":
        from interp_heads.models.tiny import tiny_model

        model = tiny_model()
        if device is not None:
            model.to(device, print_details=False)
        model.interp_heads_source = {"spec": "tiny", "sha256": None}
        return model
    from interp_heads.models.load import ModelLoadError, load_model

    try:
        return load_model(spec, device=device, n_devices=n_devices, backend=backend)
    except ModelLoadError as exc:
        raise PipelineError(one_line(exc)) from None
