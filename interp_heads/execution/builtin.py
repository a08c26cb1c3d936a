"""The built-in executors' registrations: each factory imports its executor when called."""

from __future__ import annotations

from interp_heads.execution.registry import EXECUTORS


def _local(settings, model):
    from interp_heads.execution.local import LocalExecutor

    return LocalExecutor(model)


def _plain(settings, model):
    from interp_heads.execution.local import PlainExecutor

    return PlainExecutor(model)


def _packed(settings, model):
    from interp_heads.execution.packed import PackedExecutor

    return PackedExecutor(model)


def _ray(settings, model):
    """Ray actors that load ``settings.model`` and must match ``model``'s fingerprint."""
    from interp_heads.execution.ray import RayExecutor
    from interp_heads.store.resume import model_fingerprint

    return RayExecutor(
        settings.model,
        device=settings.device,
        n_workers=getattr(settings, "n_workers", None),
        address=getattr(settings, "ray_address", None),
        n_devices=getattr(settings, "n_devices", None) or 1,
        fingerprint=model_fingerprint(model),
    )


for _name, _factory in (("local", _local), ("plain", _plain), ("packed", _packed), ("ray", _ray)):
    EXECUTORS.register(_name, _factory)
