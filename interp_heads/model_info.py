"""What the package knows about a model, kept beside it rather than set on it.

A loaded model's identity (its source spec, file hash and backend: the model's part of every
resume key and manifest), how many of its forward hooks treat every row alike
(``models.alike``), whether the thread watcher is on it (``models.threads``) and its
vocabulary's newline tables (``generation.decode``): one frozen :class:`ModelInfo` per model,
replaced whole when something changes. No attribute of the package is set on the model object, so
a model is exactly what TransformerLens built (``vars(model)`` unchanged by a run).

The table is keyed weakly by the model object (a ``torch.nn.Module`` hashes by identity): an
entry goes when its model goes. The model is what the public functions take
(``attribute_heads(model, ...)``, ``run_sweep(model, ...)``, a user's own
``HookedTransformer`` included), so a second object carried beside it would change every
signature from ``models`` up to ``pipeline`` and every user's call; one table in one module keeps
the state apart without that. A model the package did not load has no entry: its identity is
empty (resume keys then hash its weights: ``store.resume``).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

_INFO: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class ModelInfo:
    """The package's knowledge of one model (replaced whole, never changed in place).

    ``source``: where its weights came from (``spec``, ``sha256`` and, for the bridge and
    registered backends, ``backend``); ``alike_hooks``: how many of its forward hooks treat every
    row and pass alike; ``threads_watch``: whether the thread watcher's hook is on it;
    ``newline_tables``: per-token newline booleans over the vocabulary, made once.
    """

    source: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))
    alike_hooks: int = 0
    threads_watch: bool = False
    newline_tables: tuple | None = field(default=None, compare=False, repr=False)


def model_info(model) -> ModelInfo:
    """What is known of ``model`` (an empty ``ModelInfo`` for a model never seen)."""
    return _INFO.get(model) or ModelInfo()


def update_info(model, **changes: Any) -> ModelInfo:
    """Replace ``model``'s info by a copy with ``changes`` (``ModelInfo``'s fields)."""
    info = replace(model_info(model), **changes)
    _INFO[model] = info
    return info


def source_of(model) -> dict:
    """``model``'s identity (``spec``, ``sha256``, maybe ``backend``) as a new dict; empty for a
    model the package did not load."""
    return dict(model_info(model).source)


def set_source(model, **source: Any) -> None:
    """Record where ``model`` came from: ``source`` replaces the keys it names
    (``set_source(model, spec="tiny", sha256=None)``; a registered backend adds
    ``backend=name``, by which ``backend_of`` finds it)."""
    update_info(model, source=MappingProxyType({**model_info(model).source, **source}))
