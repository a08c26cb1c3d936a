"""The house: packages by role in one layer order, no import that runs back up, no circle,
no module over 400 lines. Every ``import`` counts, also those inside functions."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import interp_heads

PACKAGE = Path(interp_heads.__file__).parent
# low -> high; a module may import its own layer and the layers below it
LAYERS = [
    {"errors", "choices", "heads", "registry", "arguments", "plugins", "model_info", "__init__"},
    {"store"},
    {"models"},
    {"generation"},
    {"tasks"},
    {"interventions"},
    {"figures"},
    {"attribution"},
    {"metrics"},
    {"execution"},
    {"sweep"},
    {"analysis"},
    {"zoo"},
    {"testing"},
    {"run"},
    {"report"},
    {"config"},
    {"pipeline"},
    {"studies"},
    {"cli"},
]
LAYER = {name: i for i, names in enumerate(LAYERS) for name in names}
MAX_LINES = (
    400  # one feature in one place: a cap that keeps modules readable, not a reason to split
)


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        yield path, parts


def _imports(path: Path, parts: tuple[str, ...]):
    tree = ast.parse(path.read_text())
    package = (
        ("interp_heads", *parts[:-1]) if parts[-1] != "__init__" else ("interp_heads", *parts[:-1])
    )
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name.split(".")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(package[: len(package) - node.level + 1])
                mod = base + (node.module.split(".") if node.module else [])
            else:
                mod = (node.module or "").split(".")
            if mod[:1] == ["interp_heads"] and len(mod) == 1:  # from interp_heads import x
                for alias in node.names:
                    yield ["interp_heads", alias.name]
            else:  # ``from package import module`` imports that module; a name: its module
                for alias in node.names:
                    yield [*mod, alias.name]


def _role(parts) -> str:
    return parts[0] if parts else "__init__"


def test_every_package_has_a_layer():
    roles = {_role(parts) for _, parts in _modules()}
    assert roles <= set(LAYER), f"no layer for {sorted(roles - set(LAYER))}"


def test_no_import_runs_back_up():
    wrong = []
    for path, parts in _modules():
        if parts == ("__init__",):
            continue  # the lazy public API names homes in every layer
        mine = LAYER[_role(parts)]
        for mod in _imports(path, parts):
            if mod[:1] != ["interp_heads"] or len(mod) < 2:
                continue
            theirs = LAYER.get(mod[1], LAYER["__init__"])
            if theirs > mine:
                wrong.append(f"{'/'.join(parts)} -> {'.'.join(mod)}")
    assert not wrong, "imports that run back up:\n" + "\n".join(wrong)


def _module_graph() -> dict[str, set[str]]:
    """``{module: modules it imports}`` over every import, also those inside functions."""
    names = {}
    for path, parts in _modules():
        inner = parts[:-1] if parts[-1] == "__init__" else parts
        names[".".join(("interp_heads", *inner))] = (path, parts)
    graph = {}
    for name, (path, parts) in names.items():
        found = set()
        for mod in _imports(path, parts):
            dotted, parent = ".".join(mod), ".".join(mod[:-1])
            if dotted in names and dotted != name:
                found.add(dotted)
            elif parent in names and parent != name:
                found.add(parent)  # ``from module import name``: a name defined in module
        graph[name] = found
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_no_import_circle():
    """A package's ``__init__`` may import its own modules; a module importing its package is
    counted as importing that ``__init__``, so a registry and its entries cannot form a circle."""
    graph = _module_graph()
    assert "interp_heads.interventions.kinds.mean" in graph["interp_heads.interventions.kinds"]
    assert not _circles(graph), _circles(graph)


def _bench_graph() -> dict[str, set[str]]:
    """``{module: bench modules it imports}`` over the benchmark and study scripts in ``bench/``."""
    root = PACKAGE.parent / "bench"
    names = {
        ".".join(("bench", *p.relative_to(root).with_suffix("").parts)): p
        for p in root.rglob("*.py")
    }
    graph = {}
    for name, path in names.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            mods = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            found |= {m for m in mods if m in names and m != name}
        graph[name] = found
    return graph


def test_no_import_circle_in_bench_and_bench_is_above_the_package():
    graph = _bench_graph()
    assert "bench.common" in graph and not _circles(graph), _circles(graph)
    back = [str(p) for p in PACKAGE.rglob("*.py") if "from bench" in p.read_text()]
    assert not back, f"the package imports bench/: {back}"


def test_no_module_is_over_400_lines():
    long = {
        str(path.relative_to(PACKAGE)): n
        for path, _ in _modules()
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert not long, long


# Raw reads of files: above ``run/`` (in report/ and studies/) a run folder is read only through
# ``run.Run``. Each exception is (module, function) with its reason.
RAW_READS = {"read_csv", "read_json", "read_parquet", "read_table", "read_plain", "read_bytes",
             "read_text", "loads", "load"}  # fmt: skip
RAW_READERS = (
    "interp_heads.store.readback",
    "interp_heads.store.files",
    "interp_heads.store.csv_cells",
)
RAW_READ_ALLOWED = {
    ("report/html.py", None): "imports read_plain for _sha256",
    ("report/html.py", "_sha256"): "the digest of the report's own plotly.min.js, compared "
    "before it is rewritten (the write side of figures/, not an artefact read back)",
    ("studies/protocols.py", "_config"): "a study's TOML config under configs/ (not a run folder)",
    (
        "studies/ground_truth/__init__.py",
        "_done_record",
    ): "the study's own done.json marker in its models/<name> "
    "folder (not a run folder's file; store.layout does not name it)",
    # a study config read to size a study, and the ground-truth study's own files
    ("studies/compare/__init__.py", "small_changes"): "a study's TOML config under configs/",
    (
        "studies/ground_truth/__init__.py",
        "run_real_induction",
    ): "the study's own real_induction.json, kept to resume (not a run folder's file)",
    ("studies/ground_truth/page.py", "write_page"): "the study's own real_induction.json "
    "(not a run folder's file)",
    ("studies/ground_truth/page.py", "read_tables"): "the study's own models/<name>/<table>.csv "
    "(not a run folder's file; store.layout does not name it)",
}


def _raw_reads(path: Path, rel: str) -> list[str]:
    """``rel:line function: call`` of every raw read (a ``read_*``/``json.load*``/``pd.read_*``
    call, or an import of the store's raw readers) outside the allowed functions."""
    tree, found = ast.parse(path.read_text()), []

    def visit(node, func):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            func = node.name if func is None else func  # the outermost function decides
        name = None
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if name == "load" and not (
                isinstance(f, ast.Attribute) and getattr(f.value, "id", "") == "json"
            ):
                name = None  # ``json.load`` only (``X.load`` is a model's, a metric's)
            if name not in RAW_READS and not (name or "").startswith("read_"):
                name = None
            elif name and name.startswith("read_") and name not in RAW_READS:
                base = f.value if isinstance(f, ast.Attribute) else None
                name = name if getattr(base, "id", "") in ("pd", "pandas") else None
        elif isinstance(node, ast.ImportFrom) and node.module in RAW_READERS:
            bad = [a.name for a in node.names if a.name in RAW_READS]
            name = f"import {', '.join(bad)}" if bad else None
        if name and (rel, func) not in RAW_READ_ALLOWED:
            found.append(f"{rel}:{node.lineno} {func}: {name}")
        for child in ast.iter_child_nodes(node):
            visit(child, func)

    visit(tree, None)
    return found


def test_report_and_studies_read_run_folders_only_through_run():
    raw = [
        hit
        for package in ("report", "studies")
        for path in sorted((PACKAGE / package).rglob("*.py"))
        for hit in _raw_reads(path, str(path.relative_to(PACKAGE)))
    ]
    assert not raw, "raw reads of files (read through interp_heads.run.Run):\n" + "\n".join(raw)


def test_the_raw_read_check_can_fail(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import json, pandas as pd\nfrom interp_heads.store.readback import read_csv\n"
        "def f(p):\n    return pd.read_parquet(p), json.loads(p.read_text()), model.load()\n"
    )
    hits = _raw_reads(bad, "studies/bad.py")
    assert [h.split(": ", 1)[1] for h in hits] == [
        "import read_csv",
        "read_parquet",
        "loads",
        "read_text",
    ], hits
    allowed = tmp_path / "allowed.py"
    allowed.write_text(
        "def _done_record(p):\n    return read_json(p)\ndef g(p):\n    return read_json(p)\n"
    )
    assert _raw_reads(allowed, "studies/ground_truth/__init__.py") == [
        "studies/ground_truth/__init__.py:4 g: read_json"
    ]


REGISTRIES = {  # each registry and the package whose files register its built-ins
    "kinds": ("interp_heads.interventions.kinds", "KINDS"),
    "methods": ("interp_heads.attribution.methods", "METHODS"),
    "metrics": ("interp_heads.metrics.registry", "METRICS"),
    "executors": ("interp_heads.execution.registry", "EXECUTORS"),
    "selections": ("interp_heads.interventions.selections", "SELECTIONS"),
    "backends": ("interp_heads.models.backends", "BACKENDS"),
}


def _registered_in_a_fresh_process(module: str, registry: str) -> dict[str, str]:
    """``{name: module.Class}`` of a registry once a config is read, in a new interpreter."""
    import json
    import subprocess
    import sys

    code = (
        "import json\n"
        "import interp_heads.config.run_config\n"
        f"from {module} import {registry} as R\n"
        "print(json.dumps({n: f'{c.__module__}.{c.__qualname__}' for n, c in "
        "zip(R.names(), R.classes())}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _decorated_classes(package: Path) -> set[str]:
    """``module.Class`` of every class under ``package`` with a ``@....register`` line."""
    found = set()
    for path in sorted(package.rglob("*.py")):
        module = ".".join(("interp_heads", *path.relative_to(PACKAGE).with_suffix("").parts))
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(
                ast.unparse(d).split("(")[0].endswith(".register") for d in node.decorator_list
            ):
                found.add(f"{module.removesuffix('.__init__')}.{node.name}")
    return found


@pytest.mark.parametrize("registry", sorted(REGISTRIES))
def test_every_builtin_class_is_registered_under_its_own_name_once_a_config_is_read(registry):
    """Each class a built-in file registers is in its registry as soon as a config is read (its
    package imports the file), under the name it gives itself: the registry is the one list of
    the built-in names, with none to keep in step with it."""
    module, name = REGISTRIES[registry]
    registered = _registered_in_a_fresh_process(module, name)
    package = PACKAGE.joinpath(*module.split(".")[1:])
    package = package if package.is_dir() else package.parent
    decorated = _decorated_classes(package)
    assert decorated and decorated <= set(registered.values())
    from importlib import import_module

    reg = getattr(import_module(module), name)
    for registered_name in registered:
        assert reg.get(registered_name).name == registered_name


def test_a_config_and_the_registries_are_read_without_torch():
    """Checking a config resolves every registry name without importing the entries' torch code."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from interp_heads.config.run_config import RunConfig\n"
        "RunConfig(tasks=['retrieval'], attribution='ablation_atp', ablation='resample',\n"
        "          metrics=['accuracy', 'chrf'], executor='packed')\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


BACKENDS_PACKAGE = ("models", "backends")
# modules that name a backend for a reason other than its behaviour
NOT_BEHAVIOUR = {
    "models/tl_compat": "defines the stand-in model classes of an environment without one",
    "store/resume": "the fingerprint leaves the default backend out (older folders resume)",
}


def _calls_backend_of(node) -> bool:
    return isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] == "backend_of"


# what asking which backend a model has looks like: a comparison of a backend's name or of
# backend_of(...), or an isinstance check against a backend's model class
BACKEND_TESTS = {
    "a backend name compared": lambda node: (
        isinstance(node, ast.Compare)
        and any(
            isinstance(c, ast.Constant) and c.value in ("hooked", "bridge")
            for c in (node.left, *node.comparators)
        )
    ),
    "backend_of(...) compared": lambda node: (
        isinstance(node, ast.Compare)
        and any(
            _calls_backend_of(c) or (isinstance(c, ast.Attribute) and _calls_backend_of(c.value))
            for c in (node.left, *node.comparators)
        )
    ),
    "isinstance of a backend's model class": lambda node: (
        isinstance(node, ast.Call)
        and getattr(node.func, "id", "") == "isinstance"
        and any(
            "TransformerBridge" in ast.unparse(arg) or "HookedTransformer" in ast.unparse(arg)
            for arg in node.args[1:]
        )
    ),
}


def test_no_backend_test_outside_the_backends_package():
    """Code outside ``models/backends/`` asks ``backend_of(model)`` for a behaviour; it never
    tests which backend a model has (``== "bridge"``, ``backend_of(...) ==``, ``isinstance(model,
    TransformerBridge)``), so a new backend is one file there."""
    found = []
    for path, parts in _modules():
        if parts[:2] == BACKENDS_PACKAGE or "/".join(parts) in NOT_BEHAVIOUR:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            found += [
                f"{'/'.join(parts)}:{node.lineno}: {what}: {ast.unparse(node)}"
                for what, test in BACKEND_TESTS.items()
                if test(node)
            ]
    assert not found, "\n".join(found)


def test_the_backend_check_finds_what_it_looks_for():
    """The check above can fail: each pattern is found in a line written to match it."""
    lines = [
        'backend_of(model) == "bridge"',
        "backend_of(model).name != name",
        "isinstance(model, TransformerBridge)",
    ]
    for line, what in zip(lines, BACKEND_TESTS, strict=True):
        nodes = ast.walk(ast.parse(line))
        assert any(BACKEND_TESTS[what](n) for n in nodes), (line, what)


def test_no_module_imports_another_modules_private_name():
    """A name with a leading underscore is its module's own: another module that needs it gets
    a public name (tests may reach in; the package may not)."""
    found = []
    for path, parts in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("interp_heads"):
                private = [a.name for a in node.names if a.name.startswith("_")]
                if private and node.module != "__future__":
                    found.append(
                        f"{'/'.join(parts)}: from {node.module} import {', '.join(private)}"
                    )
    assert not found, "\n".join(found)
