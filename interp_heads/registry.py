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
them (the files import the registry's ``base`` module, never the package: no import circle); the
order it imports them in is the order :meth:`Registry.names` lists them (help, tables, figures).
A user's variant does the same and is then accepted by the config, the CLI and every code path
that resolves the name. The registry is the only list of the names: the built-in files register
without importing torch, so a config is checked against it cheaply.

A class declares its options once, as the fields of its nested ``Options`` dataclass
(``Scale.Options``); :meth:`Registry.options` gathers them over the registered classes, so the
config, the CLI flags and the digests read them from there and a new variant's options need no
second declaration. Every registered class is built one way, :meth:`Registry.build`:
``REG.build(name, options, ctx)`` calls the class's ``build(options, ctx)`` classmethod with its
own ``Options`` and the registry's context, one frozen dataclass per registry
(``Registry(..., context=SelectionContext)``; :class:`NoContext` where a variant needs nothing
besides its options). The base class of each extension point defines ``build``; a model
family, a record, is read with :meth:`Registry.get`. Names are matched case-insensitively with
``-`` and ``_`` equal (and an underscore may be left out: ``layermatched``, ``keeptopk``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Generic, TypeVar

from interp_heads.errors import InputError

T = TypeVar("T")


def _key(name: str) -> str:
    return str(name).strip().lower().replace("-", "_")


def _declares_options(cls) -> bool:
    return dataclasses.is_dataclass(getattr(cls, "Options", None))


def _default(field: dataclasses.Field):
    """A dataclass field's default (from its factory when it has one)."""
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return field.default


@dataclasses.dataclass(frozen=True)
class NoContext:
    """The context of a registry whose variants are built from their options alone (ablation
    kinds, attribution methods, model backends): ``build(options, ctx)`` all the same."""


class Registry(Generic[T]):
    """Named classes of one kind (``what`` names the kind in error messages)."""

    def __init__(
        self,
        what: str,
        also: tuple[str, ...] = (),
        common: type | None = None,
        context: type = NoContext,
    ):
        if not (dataclasses.is_dataclass(context) and context.__dataclass_params__.frozen):
            raise TypeError(f"{what}: the context must be a frozen dataclass, got {context!r}")
        self.what = what
        # what every variant's ``build(options, ctx)`` gets besides its options
        self.context = context
        self.also = also  # names accepted besides the classes' (``auto``: one is picked later)
        # the ``Options`` every class has (a method's common options): not any class's own
        self.common = {f.name for f in dataclasses.fields(common)} if common else set()
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
        self._check_options(cls, key)
        self._items[key] = cls
        for alias in getattr(cls, "aliases", ()) or ():
            self._aliases[_key(alias)] = key
        return cls

    def own_options(self, cls) -> tuple[dataclasses.Field, ...]:
        """The options ``cls`` declares: its ``Options`` fields less the common ones."""
        if not _declares_options(cls):
            return ()
        return tuple(f for f in dataclasses.fields(cls.Options) if f.name not in self.common)

    def options(self) -> dict[str, tuple[T, dataclasses.Field]]:
        """Every registered class's own options by name: ``{name: (class, field)}``, in
        :meth:`names` order (a name two classes declare is the first one's, same default)."""
        found: dict = {}
        for cls in self.classes():
            for f in self.own_options(cls):
                found.setdefault(f.name, (cls, f))
        return found

    def option_defaults(self) -> dict:
        """The default of every option the registered classes declare."""
        return {name: _default(f) for name, (_, f) in self.options().items()}

    def check(self, values: dict) -> dict:
        """``values`` (options of any registered class, by name) checked by the ``Options`` that
        declares each (its ``__post_init__``); a name no class declares is an InputError."""
        declared = self.options()
        checked = {}
        for name, value in values.items():
            if name not in declared:
                known = ", ".join(declared) or "none"
                raise InputError(f"unknown {self.what} option {name!r}; the options: {known}")
            checked[name] = getattr(declared[name][0].Options(**{name: value}), name)
        return checked

    def kept_in(self, digest: str) -> set[str]:
        """The options a ``digest`` (``"run"``: the run config's; ``"sweep"``: the sweep's) holds
        also at their default: keys it held before they became an option
        (``metadata["kept_in"]`` names the digests)."""
        return {
            n for n, (_, f) in self.options().items() if digest in f.metadata.get("kept_in", ())
        }

    def options_of(self, cls, values: dict):
        """``cls``'s ``Options``, built from the values among ``values`` it declares (the others
        at their defaults; another class's options are not its own and are left out)."""
        mine = {f.name for f in dataclasses.fields(cls.Options)}
        return cls.Options(**{k: v for k, v in values.items() if k in mine})

    def build(self, name: str, options: Mapping | None = None, ctx=None):
        """The variant ``name`` registers, built the one way every extension point builds:
        ``cls.build(own, ctx)``, where ``own`` is the class's ``Options`` made from ``options``
        (any registered class's options by name, each checked; another class's are left out;
        None for a class without ``Options``) and ``ctx`` is what the extension point hands every
        variant, an instance of :attr:`context` (None: the context's defaults; a selection's
        ``SelectionContext``, a metric's ``allow_fallback``, an executor's ``settings`` and
        ``model``, a study's parameters)."""
        cls = self.get(name)
        checked = self.check(dict(options or {}))
        own = self.options_of(cls, checked) if _declares_options(cls) else None
        return cls.build(own, self._context(ctx))

    def _context(self, ctx):
        """``ctx``, checked to be this registry's context (None: the context at its defaults)."""
        if ctx is None:
            try:
                return self.context()
            except TypeError:
                raise TypeError(
                    f"{self.what}: build needs a {self.context.__name__} (it has no defaults)"
                ) from None
        if not isinstance(ctx, self.context):
            raise TypeError(
                f"{self.what}: build takes a {self.context.__name__}, got {type(ctx).__name__}"
            )
        return ctx

    def _check_options(self, cls, key: str) -> None:
        """An option name another class declares must have the same default there (one key)."""
        for f in self.own_options(cls):
            owner = self.options().get(f.name)
            if (
                owner is not None
                and _key(owner[0].name) != key
                and _default(owner[1]) != _default(f)
            ):
                raise ValueError(
                    f"{self.what} {cls.name!r}: option {f.name!r} is declared by "
                    f"{owner[0].name!r} with another default; name it differently"
                )

    def unregister(self, name: str) -> None:
        key = _key(name)
        self._items.pop(key, None)
        self._aliases = {a: k for a, k in self._aliases.items() if k != key}

    def canonical(self, name: object) -> str:
        """The registered name for ``name`` (an alias or another spelling), else InputError
        (also for a value that is not a string: ``ablation = 3`` in a config)."""
        if not isinstance(name, str):
            raise InputError(f"{self.what}: expected a name, got {type(name).__name__} {name!r}")
        known = {**{a: a for a in self.also}, **{k: k for k in self._items}, **self._aliases}
        key = _key(name)
        found = known.get(key)
        if found is None:
            found = {k.replace("_", ""): v for k, v in known.items()}.get(key.replace("_", ""))
        if found is None:
            choices = ", ".join(self.names())
            raise InputError(f"unknown {self.what} {name!r}; use one of {choices}")
        return found

    def get(self, name: str) -> T:
        """The class registered under ``name`` (any spelling ``canonical`` accepts)."""
        key = self.canonical(name)
        if key not in self._items:  # one of ``also``
            raise InputError(f"{self.what} {name!r} is not registered")
        return self._items[key]

    def names(self) -> tuple[str, ...]:
        """The registered names, in the order they were registered."""
        return tuple(self._items)

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
