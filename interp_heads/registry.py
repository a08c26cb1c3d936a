"""One registry per extension point: ablation kinds, attribution methods, metrics, executors,
model backends (and the model families of the hooked backend).

A :class:`Registry` maps a name to the object that implements it (SAELens' ``register_sae_class``,
one object per variant). Each built-in entry registers itself in its own file, and the package
that owns the registry imports those files, so importing the package registers them (the files
import the registry's ``base`` module, never the package: no import circle). A user's variant
does the same with ``KINDS.register(...)`` (or ``METHODS``, ``METRICS``, ``EXECUTORS``,
``BACKENDS``; ``@BACKENDS.register`` above a class with a ``name`` registers it under that name)
and is then accepted by the config, the CLI and every code path that resolves the name.
Names are matched case-insensitively with ``-`` and ``_`` equal, as ``vocab`` parses its values.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

from interp_heads.errors import InputError

T = TypeVar("T")


def _key(name: str) -> str:
    return str(name).strip().lower().replace("-", "_")


class Registry(Generic[T]):
    """Named objects of one kind (``what`` names the kind in error messages)."""

    def __init__(self, what: str, vocab=None):
        self.what = what
        self.vocab = vocab  # the built-in names (a ``vocab`` enum)
        self._items: dict[str, T] = {}
        self._aliases: dict[str, str] = {}

    def register(
        self, name: str | T, obj: T | None = None, *, aliases: tuple[str, ...] = (), replace=False
    ) -> T:
        """Add ``obj`` under ``name``; a second registration of a name needs ``replace=True``.

        With one argument, ``name`` is the object itself (a class or an instance with a ``name``
        attribute), so ``@REGISTRY.register`` above a class registers it under its ``name``.
        Returns the object registered.
        """
        if obj is None:
            obj, name = name, getattr(name, "name", None)
            if not isinstance(name, str) or not name:
                raise TypeError(
                    f"register({obj!r}): pass a name and an object, or an object with a `name`"
                )
        key = _key(name)
        if key in self._items and not replace and self._items[key] is not obj:
            raise ValueError(f"{self.what} {name!r} is already registered")
        self._items[key] = obj
        for alias in aliases:
            self._aliases[_key(alias)] = key
        return obj

    def unregister(self, name: str) -> None:
        key = _key(name)
        self._items.pop(key, None)
        self._aliases = {a: k for a, k in self._aliases.items() if k != key}

    def canonical(self, name: str) -> str:
        """The registered name for ``name`` (an alias or another spelling), else InputError.

        A built-in name (``vocab``) is answered from the vocabulary alone.
        """
        if self.vocab is not None:
            try:
                return self.vocab.parse(name).value
            except InputError:
                pass
        key = _key(name)
        key = self._aliases.get(key, key)
        if key not in self._items:
            squeezed = {k.replace("_", ""): k for k in self._items}
            key = squeezed.get(key.replace("_", ""), key)
        if key not in self._items:
            raise InputError(f"unknown {self.what} {name!r}; use one of {', '.join(self.names())}")
        return key

    def get(self, name: str) -> T:
        key = self.canonical(name)
        if key not in self._items:
            raise InputError(f"{self.what} {name!r} is not registered")
        return self._items[key]

    def names(self) -> tuple[str, ...]:
        """The registered names: the built-ins in ``vocab`` order, then the others."""
        builtin = [v for v in (self.vocab.values() if self.vocab else ()) if v in self._items]
        return (*builtin, *(k for k in self._items if k not in builtin))

    def __contains__(self, name: object) -> bool:
        try:
            self.canonical(str(name))
        except InputError:
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
