"""The variants' options as config keys, read from the registries (never declared twice).

Every option a registered variant declares (a field of its ``Options`` dataclass:
``KINDS.options()``, ``METHODS.options()``, ``SELECTIONS.options()``, ``METRICS.options()``,
``EXECUTORS.options()``) is a key of the run config: its type (with bounds) and default are the
field's, its help the field's ``metadata["help"]``, its value checked by that ``Options`` (its
``__post_init__``). The keys are flat or under their section (``[ablation]``, ``[attribution]``,
``[sweep]``, ``[metrics]``, ``[placement]``), the commands have a flag for each
(``config.flags.cli_flag``: ``ablate`` the kinds', ``attribute`` the per-task methods'), and the
config digest leaves each out at its default (``config.digest``) unless its
``metadata["kept_in"]`` names the digest (a key that digest held before it was an option). A variant registered later (a
user's) has its options read the same way the moment it is registered: SAELens'
``register_sae_class``, which registers the config class with the class, is the model.
"""

from __future__ import annotations

import typing
from functools import cache
from typing import Annotated

from pydantic import AfterValidator, Field, create_model
from pydantic.fields import FieldInfo

from interp_heads.attribution.methods import METHODS
from interp_heads.config.sections import PLACEMENT, Section
from interp_heads.execution.registry import EXECUTORS
from interp_heads.interventions.kinds import KINDS
from interp_heads.interventions.selections import SELECTIONS
from interp_heads.metrics.registry import METRICS

# which section each registry's options belong to
OPTION_SECTIONS = {
    "attribution": METHODS,
    "ablation": KINDS,
    "sweep": SELECTIONS,
    "metrics": METRICS,
    "placement": EXECUTORS,
}


def _declared() -> tuple:
    """``(section, name, owner class)`` of every registered variant's option, in order."""
    return tuple(
        (section, name, owner)
        for section, registry in OPTION_SECTIONS.items()
        for name, (owner, _) in registry.options().items()
    )


@cache
def _model_of(declared: tuple) -> type[Section]:
    """A pydantic section whose fields are the options ``declared``."""
    fields = {}
    for section, name, owner in declared:
        field = next(f for f in OPTION_SECTIONS[section].own_options(owner) if f.name == name)
        hint = typing.get_type_hints(owner.Options, include_extras=True)[name]
        default = OPTION_SECTIONS[section].option_defaults()[name]
        checked = Annotated[hint, AfterValidator(_checker(owner, name))]
        fields[name] = (checked, Field(default, description=field.metadata.get("help")))
    return create_model("VariantOptions", __base__=Section, **fields)


def _checker(owner, name: str):
    """The check of ``owner``'s ``Options`` on its option ``name`` (its ``__post_init__``)."""

    def check(value):
        return getattr(owner.Options(**{name: value}), name)

    return check


def options_model() -> type[Section]:
    """The section of every registered variant's options (rebuilt when a registry changes)."""
    return _model_of(_declared())


def option_fields() -> dict[str, FieldInfo]:
    """Every registered variant's option as a config field, by name."""
    return dict(options_model().model_fields)


def section_options(section: str, of=lambda owner: True) -> tuple[str, ...]:
    """The option names of ``section`` (``"ablation"``: every kind's), of the variants ``of``
    accepts."""
    return tuple(name for s, name, owner in _declared() if s == section and of(owner))


def placement_keys() -> tuple[str, ...]:
    """Where work runs, not what it computes (never in the digest; the CLI's flags of the same
    names override a config's): the placement section's fields and the executors' options."""
    return (*PLACEMENT, *section_options("placement"))


def kept_in(digest: str) -> set[str]:
    """Every registry's options a ``digest`` holds also at their default (``Registry.kept_in``)."""
    return set().union(*(registry.kept_in(digest) for registry in OPTION_SECTIONS.values()))


def option_defaults() -> dict:
    """Every registered variant's option at its default."""
    return {name: info.default for name, info in option_fields().items()}


def split_options(data: dict) -> tuple[dict, dict]:
    """``(options, the rest)`` of a mapping of config keys."""
    names = option_fields()
    return {k: v for k, v in data.items() if k in names}, {
        k: v for k, v in data.items() if k not in names
    }


def checked_options(given: dict) -> dict:
    """Every option's value: ``given`` checked (pydantic ``ValidationError``), the others at their
    defaults."""
    return dict(options_model()(**given))
