"""Where is a run's manifest read or written by string key? An AST count over ``interp_heads/``.

A *manifest expression* is a name with ``manifest`` in it (``manifest``, ``earlier_manifest``),
an attribute ``.manifest``, a subscript ``x["manifest"]`` / ``x.get("manifest")``, a call
``read_manifest()`` / ``manifest_dict()`` / ``need("manifest")`` / ``read("manifest")``, or a
name assigned from one of those in the same function (``m = r["manifest"]``; the names of
``for k, v in manifests.items()`` loops too). A *place* is one of these on a manifest expression:

* ``m["key"]`` (read, write or ``del``);
* ``m.get("key")``, ``.setdefault("key", ...)``, ``.pop("key")``;
* ``m.update(key=...)`` / ``m.update({...})`` (a write of named keys);
* ``"key" in m`` / ``not in``.

The manifest's own module (``interp_heads/run/``) is left out by default: it is the one place
that maps keys to typed fields. Prints every place as ``path:line: code`` and the total.

    python -m bench.checks.manifest_keys [--all] [--quiet] [PATH ...]
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "interp_heads"
ALLOWED = ("interp_heads/run/",)  # the typed manifest's home: keys are mapped there
KEY_METHODS = {"get", "setdefault", "pop"}
READERS = {"read_manifest", "manifest_dict"}  # calls that return a manifest dict
PIECE_READERS = {"need", "read", "get"}  # ``run.need("manifest")`` etc.


def _str(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _is_manifest(node: ast.AST, aliases: set[str]) -> bool:
    """``node`` evaluates to a manifest (see the module's docstring)."""
    while isinstance(node, ast.BoolOp):  # ``run.get("manifest") or {}``
        node = node.values[0]
    if isinstance(node, ast.Name):
        return "manifest" in node.id.lower() or node.id in aliases
    if isinstance(node, ast.Attribute):
        return node.attr == "manifest"
    if isinstance(node, ast.Subscript):
        return _str(node.slice) and node.slice.value == "manifest"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr in READERS:
            return True
        return (
            node.func.attr in PIECE_READERS
            and bool(node.args)
            and _str(node.args[0])
            and node.args[0].value == "manifest"
        )
    return False


def _aliases(scope: ast.AST) -> set[str]:
    """Names bound in ``scope`` to a manifest expression (repeated to a fixed point)."""
    names: set[str] = set()
    while True:
        before = len(names)
        for node in ast.walk(scope):
            if isinstance(node, ast.Assign) and _is_manifest(node.value, names):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        names.add(target.id)
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Tuple):
                for target in node.targets:  # ``c, m = r["manifest"]["config"], r["manifest"]``
                    if isinstance(target, ast.Tuple):
                        for t, v in zip(target.elts, node.value.elts, strict=False):
                            if isinstance(t, ast.Name) and _is_manifest(v, names):
                                names.add(t.id)
            elif isinstance(node, ast.For | ast.comprehension) and isinstance(node.iter, ast.Call):
                func = node.iter.func  # ``for f, m in manifests.items()``, in a loop or not
                if (
                    isinstance(func, ast.Attribute)
                    and func.attr in {"items", "values"}
                    and _is_manifest(func.value, names)
                ):
                    target = node.target
                    last = target.elts[-1] if isinstance(target, ast.Tuple) else target
                    if isinstance(last, ast.Name):
                        names.add(last.id)
        if len(names) == before:
            return names


def places(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node of ``tree`` that reads or writes a manifest key by string."""
    scopes = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    seen: set[int] = set()
    for scope in [tree, *scopes]:
        aliases = _aliases(scope) if scope is not tree else set()
        for node in ast.walk(scope):
            if id(node) in seen:
                continue
            hit = False
            if isinstance(node, ast.Subscript):
                hit = _str(node.slice) and _is_manifest(node.value, aliases)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                owner, name = node.func.value, node.func.attr
                if name in KEY_METHODS and node.args and _str(node.args[0]):
                    hit = _is_manifest(owner, aliases)
                elif name == "update":
                    hit = _is_manifest(owner, aliases)
            elif isinstance(node, ast.Compare) and len(node.ops) == 1:
                if isinstance(node.ops[0], ast.In | ast.NotIn) and _str(node.left):
                    hit = _is_manifest(node.comparators[0], aliases)
            if hit:
                seen.add(id(node))
                yield node


def scan(paths: list[Path], allowed: tuple[str, ...] = ALLOWED) -> list[tuple[str, int, str]]:
    """``[(path, line, code)]`` of every place in the Python files under ``paths``."""
    out = []
    for base in paths:
        for path in sorted(base.rglob("*.py")) if base.is_dir() else [base]:
            rel = path.resolve().relative_to(ROOT).as_posix()
            if any(rel.startswith(a) for a in allowed):
                continue
            text = path.read_text()
            lines = text.splitlines()
            for node in places(ast.parse(text)):
                out.append((rel, node.lineno, lines[node.lineno - 1].strip()))
    return sorted(set(out))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", type=Path, default=[PACKAGE])
    ap.add_argument("--all", action="store_true", help="count interp_heads/run/ too")
    ap.add_argument("--quiet", action="store_true", help="print the totals only")
    args = ap.parse_args(argv)
    found = scan(args.paths, () if args.all else ALLOWED)
    if not args.quiet:
        for path, line, code in found:
            print(f"{path}:{line}: {code}")
    files = sorted({p for p, _, _ in found})
    print(f"{len(found)} places in {len(files)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
