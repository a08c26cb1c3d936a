"""TransformerLens official models by name (``"gpt2"``): downloaded from the Hugging Face hub.

Offline, the hub client retries five times with long tracebacks (about 20 s) before giving up;
here a model that is not in the local Hugging Face cache is loaded only after one quick request
shows the hub is there, so an offline ``load_model("gpt2")`` fails at once with one line.
"""

from __future__ import annotations

import os

import torch

from interp_heads.models.convert import ModelLoadError
from interp_heads.models.tl_compat import HookedTransformer


def hub_reachable(timeout: float = 5.0) -> bool:
    """Whether the Hugging Face hub answers one request (no retries); False when offline mode
    (``HF_HUB_OFFLINE``) is set. Any HTTP answer counts: the server is there."""
    import urllib.error
    import urllib.request

    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE or os.environ.get("HF_HUB_OFFLINE", "").upper() in (
        "1",
        "ON",
        "YES",
        "TRUE",
    ):
        return False
    try:
        urllib.request.urlopen(
            urllib.request.Request(constants.ENDPOINT, method="HEAD"), timeout=timeout
        )
    except urllib.error.HTTPError:
        return True
    except (OSError, ValueError):
        return False
    return True


def _cached_on_disk(name: str) -> bool:
    """Whether the official model's config is in the local Hugging Face cache."""
    from huggingface_hub import try_to_load_from_cache

    from interp_heads.models.tl_compat import get_official_model_name

    try:
        return isinstance(try_to_load_from_cache(get_official_model_name(name), "config.json"), str)
    except Exception:  # noqa: BLE001 (a cache it cannot read is a cache it does not have)
        return False


def load_official(
    name: str, device: str, dtype: torch.dtype, n_devices: int = 1
) -> HookedTransformer:
    if not _cached_on_disk(name) and not hub_reachable():  # fail fast, not after 5 retries
        raise ModelLoadError(
            f"could not download {name!r}: the network (Hugging Face hub) is unreachable; "
            "pass a local model folder or .gguf file instead"
        )
    try:
        return HookedTransformer.from_pretrained_no_processing(
            name, device=device, dtype=dtype, n_devices=n_devices
        )
    except OSError as exc:
        raise ModelLoadError(
            f"could not download {name!r}: the network (Hugging Face hub) is unreachable; "
            "pass a local model folder or .gguf file instead"
        ) from exc
