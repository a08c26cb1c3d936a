"""A user's own variants, loaded from their modules: plugins.

A plugin is a module that registers one or more variants when it is imported (an ablation kind,
a metric, an attribution method, a selection, an executor, a backend, a study, a step: the same
``@REGISTRY.register`` line as a built-in file, docs/extending.md). Nothing else declares it: the
registries are the one list of names, so once the module is imported its names are accepted by
the config, by the CLI's flags (a kind's ``Options`` become ``ablate`` flags) and by every code
path that resolves a name. Three ways name the modules to import, all before the command line is
parsed (the parser's flags and choices are read from the registries):

- an installed distribution's entry point in the group :data:`GROUP` (``pyproject.toml``:
  ``[project.entry-points."interp_heads.plugins"]`` ``my_kind = "my_kind"``), found by
  ``importlib.metadata``; the entry point's object is loaded, which imports its module;
- ``interp-heads --plugin MODULE`` (repeatable, before or after the sub-command);
- the environment variable :data:`ENV` (``INTERP_HEADS_PLUGINS=mod_a,mod_b``), which child
  processes inherit.

Loading imports only what the plugins import (a plugin that registers a kind imports
``interp_heads.interventions.kinds``, which imports no torch), so the CLI's early checks of bad
input stay fast. A module that cannot be imported is bad input: :class:`PluginError`, one line
naming the module (the CLI: exit 2).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable, Mapping, Sequence

from interp_heads.errors import InputError, one_line

GROUP = "interp_heads.plugins"  # the entry-point group of installed plugins
ENV = "INTERP_HEADS_PLUGINS"  # comma-separated modules to import
FLAG = "--plugin"


class PluginError(InputError):
    """A plugin module (or entry point) that failed to import; the message names it."""


def _import(module: str, origin: str) -> None:
    try:
        importlib.import_module(module)
    except Exception as exc:  # any failure of the user's module is the user's input
        raise PluginError(
            f"plugin {module!r} ({origin}) failed to import: {type(exc).__name__}: {one_line(exc)}"
        ) from exc


def from_env(environ: Mapping[str, str] | None = None) -> list[str]:
    """The modules :data:`ENV` names (comma-separated; blanks ignored)."""
    value = (os.environ if environ is None else environ).get(ENV, "")
    return [m.strip() for m in value.split(",") if m.strip()]


def from_argv(argv: Sequence[str]) -> list[str]:
    """The modules ``--plugin MODULE`` / ``--plugin=MODULE`` name anywhere in ``argv`` (also an
    abbreviation argparse accepts, ``--plug``), read before the parser is built; the parser
    declares the flag as well, so ``--help`` lists it. A ``--plugin`` with nothing after it is
    left to the parser's error."""
    found = []
    args = list(argv)
    for i, arg in enumerate(args):
        if arg == "--":
            break
        flag, eq, value = str(arg).partition("=")
        if len(flag) < len("--pl") or not FLAG.startswith(flag):
            continue
        if eq:
            found.append(value)
        elif i + 1 < len(args):
            found.append(str(args[i + 1]))
    return [m.strip() for m in found if m.strip()]


def entry_points() -> list:
    """The installed entry points of :data:`GROUP`, by name (distributions in sys.path order)."""
    from importlib.metadata import entry_points as found

    return sorted(found(group=GROUP), key=lambda ep: ep.name)


def load_plugins(modules: Iterable[str] = (), *, env: bool = True, installed: bool = True) -> list:
    """Import the installed entry points of :data:`GROUP` (``installed``), the modules :data:`ENV`
    names (``env``) and ``modules``, in that order; returns the names loaded. Importing twice is
    free (``sys.modules``), so calling again registers nothing twice."""
    loaded = []
    if installed:
        for ep in entry_points():
            try:
                ep.load()
            except Exception as exc:
                raise PluginError(
                    f"plugin {ep.value!r} (entry point {ep.name!r} of {GROUP}) failed to import: "
                    f"{type(exc).__name__}: {one_line(exc)}"
                ) from exc
            loaded.append(ep.value)
    for module in from_env() if env else ():
        _import(module, ENV)
        loaded.append(module)
    for module in modules:
        _import(module, FLAG)
        loaded.append(module)
    return loaded
