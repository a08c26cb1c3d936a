"""The TransformerLens names that exist only in TransformerLens 2.18 / 3.x, in one place.

TransformerLens 4 removed ``HookedTransformer``, ``HookedTransformerConfig``,
``loading_from_pretrained``, ``components`` and ``past_key_value_caching``; its models are
``TransformerBridge`` objects wrapping the Hugging Face model (the ``bridge`` backend,
:mod:`interp_heads.models.backends`). Every module imports those names from here, so the package imports
in both environments (``make setup``: TransformerLens 2.18; ``make setup-tl4``: TransformerLens 4).

Without TransformerLens 2.18 the names are stand-ins: ``HookedTransformer`` is then the type of
*any* model this toolkit runs (a ``TransformerBridge`` is an instance of it, so annotations and
their runtime checks hold on either backend), and building one, or a config or a KV cache of the
hooked backend, is a one-line :class:`BackendError` that names the environment that has it.
"""

from __future__ import annotations

import importlib.metadata

try:  # TransformerLens 2.18 / 3.x: the hooked backend
    from transformer_lens import HookedTransformer, HookedTransformerConfig
    from transformer_lens.components import AbstractAttention
    from transformer_lens.past_key_value_caching import (
        HookedTransformerKeyValueCache,
        HookedTransformerKeyValueCacheEntry,
    )

    HAS_HOOKED = True
except ImportError:
    HAS_HOOKED = False

try:  # TransformerLens 3.x / 4.x: the bridge backend
    from transformer_lens.model_bridge import TransformerBridge

    HAS_BRIDGE = True
except ImportError:
    TransformerBridge = None
    HAS_BRIDGE = False

TL_VERSION = importlib.metadata.version("transformer-lens")
HOOKED_ENV = "the default environment (make setup: TransformerLens 2.18)"
BRIDGE_ENV = "the tl4 environment (make setup-tl4: TransformerLens 4)"


class BackendError(RuntimeError):
    """A backend (or a piece of one) that this environment or this model cannot provide."""


def no_hooked(what: str) -> BackendError:
    """The one-line error for a hooked-backend object asked for without TransformerLens 2.18."""
    return BackendError(
        f"{what} needs the hooked backend, which TransformerLens {TL_VERSION} does not have; "
        f"use backend = 'bridge' here, or {HOOKED_ENV}"
    )


def no_bridge() -> BackendError:
    """The one-line error for the bridge backend asked for without TransformerLens 3 or 4."""
    return BackendError(
        f"backend 'bridge' needs TransformerLens' TransformerBridge, which TransformerLens "
        f"{TL_VERSION} does not have; use {BRIDGE_ENV}, or backend = 'hooked'"
    )


if not HAS_HOOKED:

    class _AnyModel(type):
        """Metaclass: a TransformerBridge passes ``isinstance(model, HookedTransformer)``."""

        def __instancecheck__(cls, obj) -> bool:
            return HAS_BRIDGE and isinstance(obj, TransformerBridge)

    class HookedTransformer(metaclass=_AnyModel):  # noqa: D101 (see the module docstring)
        def __new__(cls, *args, **kwargs):
            raise no_hooked("HookedTransformer")

    class HookedTransformerConfig:  # noqa: D101
        def __new__(cls, *args, **kwargs):
            raise no_hooked("HookedTransformerConfig")

    class AbstractAttention:  # noqa: D101 (no bridge attention is one: fused attention is off)
        def __new__(cls, *args, **kwargs):
            raise no_hooked("AbstractAttention")

    class HookedTransformerKeyValueCache:  # noqa: D101
        @classmethod
        def init_cache(cls, *args, **kwargs):
            raise no_hooked("a TransformerLens KV cache")

    class HookedTransformerKeyValueCacheEntry:  # noqa: D101
        def __new__(cls, *args, **kwargs):
            raise no_hooked("a TransformerLens KV cache entry")


def get_official_model_name(name: str) -> str:
    """TransformerLens' official name for ``name`` (hooked backend); ValueError when unknown."""
    if not HAS_HOOKED:
        raise ValueError(name)
    from transformer_lens.loading_from_pretrained import get_official_model_name as official

    return official(name)


__all__ = [
    "HAS_BRIDGE",
    "HAS_HOOKED",
    "AbstractAttention",
    "BackendError",
    "HookedTransformer",
    "HookedTransformerConfig",
    "HookedTransformerKeyValueCache",
    "HookedTransformerKeyValueCacheEntry",
    "TransformerBridge",
    "get_official_model_name",
]
