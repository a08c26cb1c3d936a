"""A study's options: the fields of its frozen ``Options`` dataclass, set by ``--param KEY=VALUE``.

A study declares its options as every other variant does (SAELens' config class beside the
registered class): one field each, typed, with a default and a ``help`` text in its metadata::

    @dataclass(frozen=True)
    class Options:
        k: Annotated[int, Interval(ge=1, le=100_000)] = field(
            default=16, metadata={"help": "the heads masked"})
        task: str | None = field(default=None, metadata={"help": "the task file (needed)"})

A default of None marks an option the study needs (``Study.param`` refuses to go on without it).
:func:`parse_options` turns the text ``--param`` gives (or a value already typed, from Python)
into the field's type, ``str``, ``int`` (within the bounds of its ``Annotated`` ``Ge``, ``Gt``,
``Le``, ``Lt`` or ``Interval``) or ``bool``, or refuses it in one line that names the key, when
the study is built: before any run."""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from annotated_types import Ge, Gt, Interval, Le, Lt

from interp_heads.errors import PipelineError

MAX_PARAM = 4096  # the longest --param value read (a path); a longer one is not a value
TRUE, FALSE = {"true", "1", "yes"}, {"false", "0", "no"}
KINDS = (str, int, bool)  # the types an option may have (each optionally ``| None``)


@dataclass(frozen=True)
class OptionKind:
    """What an option's field says its values are: ``kind`` (one of :data:`KINDS`) and, for an
    ``int``, its bounds (None: unbounded)."""

    kind: type
    low: int | None = None
    high: int | None = None


def _bounds(extras) -> tuple[int | None, int | None]:
    """The whole-number bounds of ``Annotated`` metadata (an ``Interval`` is its parts)."""
    low = high = None
    for bound in [
        b for extra in extras for b in (extra if isinstance(extra, Interval) else [extra])
    ]:
        if isinstance(bound, Ge | Gt):
            low = bound.ge if isinstance(bound, Ge) else bound.gt + 1
        elif isinstance(bound, Le | Lt):
            high = bound.le if isinstance(bound, Le) else bound.lt - 1
    return low, high


def option_kinds(options: type) -> dict[str, OptionKind]:
    """``{field: OptionKind}`` of an ``Options`` dataclass, read from its type hints.

    Raises:
        TypeError: a field of another type (a study's declaration error, not a user's).
    """
    hints = typing.get_type_hints(options, include_extras=True)
    found = {}
    for f in dataclasses.fields(options):
        hint, extras = hints[f.name], ()
        if typing.get_origin(hint) is typing.Annotated:
            hint, *extras = typing.get_args(hint)
        if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
            inner = [a for a in typing.get_args(hint) if a is not type(None)]
            hint = inner[0] if len(inner) == 1 else hint
            if typing.get_origin(hint) is typing.Annotated:
                hint, *more = typing.get_args(hint)
                extras = [*extras, *more]
        if hint not in KINDS:
            raise TypeError(f"{options.__qualname__}.{f.name}: a study option is str, int or bool")
        found[f.name] = OptionKind(hint, *(_bounds(extras) if hint is int else (None, None)))
    return found


def parse_value(study: str, name: str, kind: OptionKind, value: Any) -> Any:
    """``value`` (text from ``--param``, or already typed from Python) as ``kind``, or a
    one-line :class:`PipelineError` naming ``--param name=``."""
    bad = f"study {study}: --param {name}="
    if isinstance(value, int) and not isinstance(value, bool) and kind.kind is int:
        value = str(value) if value.bit_length() < 64 else "<a number over 64 bits>"
    text = str(value).strip()
    if len(text) > MAX_PARAM or "\0" in text:
        raise PipelineError(f"{bad}<{len(text)} characters>: not a value (at most {MAX_PARAM})")
    shown = text if len(text) <= 40 else text[:37] + "..."
    if kind.kind is bool:
        if isinstance(value, bool) or text.lower() in TRUE | FALSE:
            return value if isinstance(value, bool) else text.lower() in TRUE
        raise PipelineError(f"{bad}{shown!r}: expected true or false")
    if kind.kind is int:
        if isinstance(value, bool) or not re.fullmatch(r"[+-]?[0-9]{1,18}", text):
            raise PipelineError(f"{bad}{shown!r}: expected a whole number")
        number = int(text)
        if (kind.low is not None and number < kind.low) or (
            kind.high is not None and number > kind.high
        ):
            low = "" if kind.low is None else kind.low
            high = "" if kind.high is None else kind.high
            raise PipelineError(f"{bad}{number}: expected {low}..{high}")
        return number
    if not isinstance(value, str):
        raise PipelineError(f"{bad}{shown!r}: expected text")
    return text


def parse_options(study: str, options: type, given: Mapping[str, Any], base=None):
    """The ``Options`` instance of ``given`` (``{key: text or value}``; None: the default) on
    top of ``base`` (None: the defaults): every value typed, an unknown key refused in one line
    that lists the known ones."""
    known = [f.name for f in dataclasses.fields(options)]
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise PipelineError(f"study {study}: unknown parameter(s) {', '.join(unknown)}; "
                            f"known: {', '.join(known) or 'none'}")  # fmt: skip
    kinds = option_kinds(options)
    typed = {k: parse_value(study, k, kinds[k], v) for k, v in given.items() if v is not None}
    return dataclasses.replace(options() if base is None else base, **typed)


def needed(options: type) -> list[str]:
    """The options with no default (None): a study cannot run without them."""
    return [f.name for f in dataclasses.fields(options) if f.default is None]


def option_help(options: type, name: str) -> str:
    """A field's ``help`` text ("" when it has none)."""
    found = {f.name: f for f in dataclasses.fields(options)}.get(name)
    return "" if found is None else str(found.metadata.get("help", ""))
