"""One registry per extension point: ablation kinds, attribution methods, metrics, executors,
selections and model backends (and the hooked backend's model families), all of one shape.

A :class:`Registry` maps a name to the *class* that implements it (SAELens' ``register_sae_class``:
one class per variant, in its own file). The class names itself: its ``name`` class attribute is
the registered name and ``aliases`` (optional) are other spellings, so a registration is one
decorator line and never repeats the name (a model family, a record rather than a class,
registers the same way: an object with ``name`` and ``aliases``)::

    @KINDS.register
    class FirstPromptMean(Ablation):
        name = "first_prompt_mean"

The package that owns a registry imports its built-in files, so importing the package registers
them (the files import the registry's ``base`` module, never the package: no import circle). A
user's variant does the same and is then accepted by the config, the CLI and every code path that
resolves the name. Names are matched case-insensitively with ``-`` and ``_`` equal, as ``vocab``
parses its values; the built-in names are the ``vocab`` enums, so a config is checked without
importing the variants' heavy code.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

from interp_heads.errors import InputError

T = TypeVar("T")


def _key(name: str) -> str:
    return str(name).strip().lower().replace("-", "_")


class Registry(Generic[T]):
    """Named classes of one kind (``what`` names the kind in error messages)."""

    def __init__(self, what: str, vocab=None):
        self.what = what
        self.vocab = vocab  # the built-in names (a ``vocab`` enum)
        self._items: dict[str, T] = {}
        self._aliases: dict[str, str] = {}

    def register(self, cls: T | None = None, *, replace: bool = False):
        """Register ``cls`` under its ``name`` (and ``aliases``); usable as ``@REG.register`` or
        ``@REG.register(replace=True)``. A second class under a taken name needs ``replace``."""
        if cls is None:
            return lambda c: self.register(c, replace=replace)
        name = getattr(cls, "name", None)
        if not isinstance(name, str) or not name:
            raise TypeError(f"{self.what}: register a class whose `name` names it, got {cls!r}")
        key = _key(name)
        if key in self._items and not replace and self._items[key] is not cls:
            raise ValueError(f"{self.what} {name!r} is already registered")
        self._items[key] = cls
        for alias in getattr(cls, "aliases", ()) or ():
            self._aliases[_key(alias)] = key
        return cls

    def unregister(self, name: str) -> None:
        key = _key(name)
        self._items.pop(key, None)
        self._aliases = {a: k for a, k in self._aliases.items() if k != key}

    def canonical(self, name: object) -> str:
        """The registered name for ``name`` (an alias or another spelling), else InputError
        (also for a value that is not a string: ``ablation = 3`` in a config).

        A built-in name (``vocab``) is answered from the vocabulary alone.
        """
        if not isinstance(name, str):
            raise InputError(f"{self.what}: expected a name, got {type(name).__name__} {name!r}")
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
        """The class registered under ``name`` (any spelling ``canonical`` accepts)."""
        key = self.canonical(name)
        if key not in self._items:
            raise InputError(f"{self.what} {name!r} is not registered")
        return self._items[key]

    def names(self) -> tuple[str, ...]:
        """The registered names: the built-ins in ``vocab`` order, then the others."""
        builtin = [v for v in (self.vocab.values() if self.vocab else ()) if v in self._items]
        return (*builtin, *(k for k in self._items if k not in builtin))

    def classes(self) -> list[T]:
        """The registered classes, in :meth:`names` order."""
        return [self._items[n] for n in self.names()]

    def __contains__(self, name: object) -> bool:
        try:
            self.canonical(str(name))
        except InputError:
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
