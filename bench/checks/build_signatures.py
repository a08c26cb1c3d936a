"""How many signatures the registries build their variants with (the target: one, `build(cls, options, ctx)`).

Finds every ``Registry(...)`` the package creates (by the AST of ``interp_heads/``), imports it
with its package (so the built-in variants are registered), and for each registered class reads
the ``build`` it inherits or defines from that function's own source (its AST): the parameter
list with annotations and defaults dropped and the first parameter of a classmethod
(``cls``) left out, so ``build(cls, options, ctx: SelectionContext)`` counts as
``(options, ctx)``. A registry of records (a pipeline step, a model family) builds nothing and
is listed as such. Prints each registry's shapes with the classes that use them, then the count
of distinct shapes over every registry::

    python -m bench.checks.build_signatures
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections import defaultdict
from importlib import import_module
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "interp_heads"


def registries() -> list[tuple[str, str]]:
    """``(module, variable)`` of every ``NAME = Registry(...)`` (or ``NAME: ... = Registry(...)``)
    in the package, in file order."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(("interp_heads", *path.relative_to(PACKAGE).with_suffix("").parts))
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            value = getattr(node, "value", None)
            target = (
                node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
            )
            if (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Name)
                and value.func.id.endswith("Registry")
                and isinstance(target, ast.Name)
            ):
                found.append((module.removesuffix(".__init__"), target.id))
    return found


def load(module: str, name: str):
    """The registry, its package imported first (the package registers the built-ins)."""
    parent = module.rsplit(".", 1)[0]
    if parent != "interp_heads":
        import_module(parent)
    return getattr(import_module(module), name)


def shape(cls) -> str | None:
    """``cls.build``'s parameters as written in its source, ``cls`` left out; None: no build."""
    owner = next((c for c in cls.__mro__ if "build" in vars(c)), None)
    if owner is None:
        return None
    raw = vars(owner)["build"]
    func = raw.__func__ if isinstance(raw, classmethod | staticmethod) else raw
    tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    args = tree.body[0].args
    params = [a.arg for a in args.posonlyargs + args.args]
    if not isinstance(raw, staticmethod):
        params = params[1:]  # cls (a classmethod) or self
    params += [f"*{args.vararg.arg}"] if args.vararg else []
    params += [a.arg for a in args.kwonlyargs]
    params += [f"**{args.kwarg.arg}"] if args.kwarg else []
    return f"({', '.join(params)})"


def main() -> int:
    everywhere: set[str] = set()
    for module, name in registries():
        reg = load(module, name)
        by_shape: dict[str, list[str]] = defaultdict(list)
        for item in reg.classes():
            if not isinstance(item, type):
                by_shape["records: nothing built"].append(item.name)
                continue
            found = shape(item)
            by_shape[found or "no build"].append(item.name)
            if found:
                everywhere.add(found)
        print(f"{module}.{name} ({reg.what}):")
        for found, names in by_shape.items():
            print(f"  {found}: {len(names)} ({', '.join(names)})")
    print(f"distinct build signatures over every registry: {len(everywhere)}")
    for found in sorted(everywhere):
        print(f"  {found}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
