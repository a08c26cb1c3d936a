"""Count, by reading the source (AST), the places where a run's typed objects are changed after
they are built: a RunConfig assigned to after validation, state set on a model object.

Three counts over ``interp_heads/`` (and ``bench/`` with ``--bench``), each place listed:

- ``config``: assignments to a ``RunConfig`` after construction: ``<x>.<key> = ...`` (also ``+=``)
  or ``setattr(<x>, ...)`` where ``<x>`` is a name or attribute called ``config`` or
  ``run_config`` (the package's name for a ``RunConfig``; a ``cfg`` is TransformerLens' model
  config) and ``<key>`` is a config key or one of ``RunConfig``'s private attributes.
- ``model``: attributes the package sets on a model object: ``model.<x> = ...`` or
  ``setattr(model, ...)`` (any attribute of a name ``model`` but ``model.cfg.<x>`` and the
  TransformerLens attributes ``tokenizer``/``forward``), and reads of the package's own
  ``interp_heads_*`` attributes through ``getattr(model, ...)``/``model.<x>`` (the state read
  back from the model).
- ``sweep``: ``SweepConfig`` fields that repeat a ``RunConfig`` key (same name), and whether
  ``SweepConfig`` is a frozen dataclass.
- ``experiment``: the fields of a run's inputs, ``pipeline.state.Experiment`` (12 before its
  split into inputs, ``Invocation`` and ``pipeline.record.RunRecord``), and whether it is frozen;
  the steps' config reads checked against their declared sections (``pipeline.config_view``).

Run: ``python -m bench.checks.mutation_counts`` (``-v``: list each place).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONFIG_NAMES = {"config", "run_config"}
MODEL_NAMES = {"model"}
TL_OWN = {"tokenizer", "forward", "cfg"}  # TransformerLens' own attributes, set as it does


def _last_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _config_keys() -> set[str]:
    from interp_heads.config.run_config import RunConfig

    return set(RunConfig.keys()) | set(RunConfig.__private_attributes__)


def _targets(node: ast.AST):
    if isinstance(node, ast.Assign):
        for target in node.targets:
            yield from _flat(target)
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        yield from _flat(node.target)


def _flat(target):
    if isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            yield from _flat(elt)
    else:
        yield target


def _is_setattr(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "setattr"
        and len(node.args) >= 2
    )


def _own(name: ast.expr) -> bool:
    """Whether an attribute name given to ``getattr`` is the package's own: an
    ``interp_heads_*`` literal, or a name held in a variable (``_MARK``)."""
    if isinstance(name, ast.Constant):
        return str(name.value).lstrip("_").startswith("interp_heads")
    return True


def scan(paths: list[Path]) -> dict[str, list[str]]:
    """The places of each count, as ``path:line: text``."""
    keys = _config_keys()
    found: dict[str, list[str]] = {"config": [], "model": []}
    for path in paths:
        text = path.read_text()
        lines = text.splitlines()

        def where(n: ast.AST, path: Path = path, lines: list[str] = lines) -> str:
            return f"{path.relative_to(ROOT)}:{n.lineno}: {lines[n.lineno - 1].strip()}"

        for node in ast.walk(ast.parse(text)):
            for target in _targets(node):
                if not isinstance(target, ast.Attribute):
                    continue
                owner = _last_name(target.value)
                if owner in CONFIG_NAMES and target.attr in keys:
                    found["config"].append(where(node))
                if owner in MODEL_NAMES and target.attr not in TL_OWN:
                    found["model"].append(where(node))
            if _is_setattr(node):
                owner = _last_name(node.args[0])
                if owner in CONFIG_NAMES:
                    found["config"].append(where(node))
                if owner in MODEL_NAMES:
                    found["model"].append(where(node))
            if (  # state read back from the model: getattr(model, "interp_heads_...")
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr")
                and len(node.args) >= 2
                and _last_name(node.args[0]) in MODEL_NAMES
                and _own(node.args[1])
            ):
                found["model"].append(where(node))
            if (  # model.interp_heads_... read, or written into (model.interp_heads_x[k] = v)
                isinstance(node, ast.Attribute)
                and _last_name(node.value) in MODEL_NAMES
                and node.attr.lstrip("_").startswith("interp_heads")
            ):
                found["model"].append(where(node))
    for name in found:
        found[name] = sorted(set(found[name]))
    return found


def sweep_fields() -> tuple[list[str], list[str], bool]:
    """``SweepConfig``'s fields that repeat a ``RunConfig`` key; those of them that the one
    derivation takes by name (``sweep.config.FROM_RUN_CONFIG``, absent before: each was mapped
    by hand); and whether it is frozen."""
    from interp_heads.config.run_config import RunConfig
    from interp_heads.sweep import config

    fields = [f.name for f in dataclasses.fields(config.SweepConfig)]
    frozen = config.SweepConfig.__dataclass_params__.frozen
    repeated = [f for f in fields if f in set(RunConfig.keys())]
    by_name = [f for f in repeated if f in getattr(config, "FROM_RUN_CONFIG", ())]
    return repeated, by_name, frozen


def experiment_fields() -> tuple[list[str], bool, bool]:
    """``Experiment``'s fields, whether it is frozen, and whether a step's config is the view of
    its declared sections (``pipeline.config_view.StepConfig``, absent before)."""
    import importlib.util

    from interp_heads.pipeline.state import Experiment

    fields = [f.name for f in dataclasses.fields(Experiment)]
    viewed = importlib.util.find_spec("interp_heads.pipeline.config_view") is not None
    return fields, Experiment.__dataclass_params__.frozen, viewed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="list each place")
    parser.add_argument("--bench", action="store_true", help="also scan bench/")
    args = parser.parse_args(argv)
    paths = sorted((ROOT / "interp_heads").rglob("*.py"))
    if args.bench:
        paths += sorted((ROOT / "bench").rglob("*.py"))
    found = scan(paths)
    labels = {
        "config": "assignments to a RunConfig after construction",
        "model": "attributes set on (or interp_heads_* read from) a model object",
    }
    for name, places in found.items():
        print(f"{labels[name]}: {len(places)}")
        if args.verbose:
            for place in places:
                print(f"    {place}")
    repeated, by_name, frozen = sweep_fields()
    print(f"SweepConfig fields repeating a RunConfig key: {len(repeated)} ({', '.join(repeated)})")
    print(f"  of them mapped one by one in the derivation: {len(repeated) - len(by_name)}")
    print(f"SweepConfig frozen: {frozen}")
    fields, frozen, viewed = experiment_fields()
    print(f"Experiment fields: {len(fields)} ({', '.join(fields)}); frozen: {frozen}")
    print(f"steps read only their declared config sections: {viewed}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
