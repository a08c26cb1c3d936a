"""CLI flags derived from config fields: type, default, choices and help come from the field.

``cli_flag(parser, "seeds")`` adds ``--seeds`` with the bounds, default and help of
``SweepSection.seeds``, so the command line and the TOML config cannot drift apart; a registered
variant's option (``config.options``) gets its flag the same way.
"""

from __future__ import annotations

import argparse
import typing
from typing import Literal

from interp_heads.choices import Choice
from interp_heads.config.options import option_fields
from interp_heads.config.sections import FIELDS
from interp_heads.registry import Registry


def cli_flag(parser, field: str, *flags: str, **overrides) -> None:
    """Add ``--field-name`` for a config field, with its type, default, choices and help."""
    from interp_heads.config import validation

    info = FIELDS[field] if field in FIELDS else option_fields()[field]
    kwargs: dict = {
        "default": info.get_default(call_default_factory=True),
        "help": info.description,
        "dest": field,  # the parsed value keeps the field's name (``cli.args.config_from_args``)
    }
    enum = _enum_of(info.annotation)
    registry = _registry_of(info)
    literal = next((a for a in _walk(info.annotation) if typing.get_origin(a) is Literal), None)
    if registry is not None:  # any registered name, also one a user added
        kwargs["type"] = _registered(registry)
        kwargs["metavar"] = "{" + ",".join((*registry.also, *registry.names())) + ",...}"
    elif enum is not None:
        kwargs["choices"] = list(enum.values())
    elif literal is not None:
        kwargs["choices"] = list(typing.get_args(literal))
    elif _positive(info):
        hi = next((a.le for a in info.metadata if getattr(a, "le", None) is not None), None)
        kwargs["type"] = validation.positive_int_arg if hi is None else validation.bounded_int(hi)
    elif _non_negative(info):
        kwargs["type"] = validation.non_negative_int
    elif float in (info.annotation, *typing.get_args(info.annotation)):
        kwargs["type"] = validation.finite_float  # never nan or inf
    elif info.annotation is bool and info.default is False:
        kwargs["action"] = "store_true"  # a switch: given turns it on
    kwargs.update(overrides)
    if registry is not None and kwargs.get("type") is validation.names_arg:
        kwargs["type"] = _registered(registry, many=True)  # each name checked, as one flag
    if isinstance(kwargs.get("default"), list):
        kwargs["default"] = [str(v) for v in kwargs["default"]]
    elif kwargs.get("default") is not None and enum is not None:
        kwargs["default"] = str(kwargs["default"])
    parser.add_argument(*(flags or ("--" + field.replace("_", "-"),)), **kwargs)


def _registered(registry, many: bool = False):
    """An argparse type: a registered name (``many``: a comma-separated list of them) in its
    canonical spelling; an unknown one is refused as ``argument --flag: unknown ... 'x'; use one
    of ...`` (argparse's own words would be ``invalid canonical value``)."""
    from interp_heads.config import validation

    def parse(text: str):
        names = validation.names_arg(text) if many else [text]
        try:
            found = [registry.canonical(name) for name in names]
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        return found if many else found[0]

    parse.__name__, parse.registry = registry.what, registry
    return parse


def _walk(annotation):
    yield annotation
    yield from getattr(annotation, "metadata", ())  # a FieldInfo inside Annotated[...]
    for arg in typing.get_args(annotation):
        yield from _walk(arg)


def _registry_of(info):
    """The registry of a field validated by ``sections._registered`` (its ``canonical``)."""
    for a in (*info.metadata, *_walk(info.annotation)):
        func = getattr(a, "func", None)
        owner = getattr(func, "__self__", None)
        if isinstance(owner, Registry) and func.__name__ == "canonical":
            return owner
    return None


def _enum_of(annotation):
    return next(
        (a for a in _walk(annotation) if isinstance(a, type) and issubclass(a, Choice)), None
    )


def _non_negative(info) -> bool:
    """Whether a field is constrained ``>= 0`` (``NonNeg``, also inside ``NonNeg | None``)."""
    return any(getattr(a, "ge", None) == 0 for a in (*info.metadata, *_walk(info.annotation)))


def _positive(info) -> bool:
    """Whether a field is constrained ``> 0`` (``Pos``, also inside ``Pos | None``)."""
    return any(getattr(a, "gt", None) == 0 for a in (*info.metadata, *_walk(info.annotation)))
