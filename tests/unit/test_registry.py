"""A registry is the one list of its names (``interp_heads.registry``): it parses every spelling
the config and the command line accept, without an enum of built-in names beside it."""

from __future__ import annotations

import pytest

from interp_heads.errors import InputError


@pytest.mark.parametrize(
    ("registry", "spelling", "name"),
    [
        ("SELECTIONS", "Layer-Matched", "layermatched"),
        ("SELECTIONS", "keeptopk", "all_but_topk"),  # an alias, its underscore left out
        ("SELECTIONS", "bottomk", "lowk"),
        ("METRICS", "minilm", "minilm_cosine"),
        ("METHODS", "AUTO", "auto"),  # not a class: a method is picked per task
        ("METHODS", "ablationatp", "ablation_atp"),
        ("KINDS", " Position-Mean ", "position_mean"),
    ],
)
def test_a_registry_reads_every_spelling_of_its_names(registry, spelling, name):
    from interp_heads.attribution.methods import METHODS
    from interp_heads.interventions.kinds import KINDS
    from interp_heads.interventions.selections import SELECTIONS
    from interp_heads.metrics.registry import METRICS

    reg = {"SELECTIONS": SELECTIONS, "METRICS": METRICS, "METHODS": METHODS, "KINDS": KINDS}
    assert reg[registry].canonical(spelling) == name


def test_the_built_in_names_are_listed_in_their_packages_import_order():
    from interp_heads.interventions.kinds import KINDS

    assert KINDS.names()[:5] == ("zero", "mean", "resample", "scale", "position_mean")


def test_a_name_that_picks_a_class_later_is_no_class():
    from interp_heads.attribution.methods import METHODS

    assert "auto" not in METHODS.names()
    with pytest.raises(InputError, match="not registered"):
        METHODS.get("auto")


def test_build_gives_each_class_its_own_options_and_its_context():
    from dataclasses import dataclass

    from interp_heads.registry import NoContext, Registry

    @dataclass(frozen=True)
    class Size:
        size: int = 1

    reg = Registry("widget", context=Size)

    @reg.register
    class Dial:
        name = "dial"

        @dataclass(frozen=True)
        class Options:
            turns: int = 1

            def __post_init__(self):
                if self.turns < 0:
                    raise InputError("turns must be >= 0")

        @classmethod
        def build(cls, options, ctx: Size):
            return ("dial", options, ctx)

    @reg.register
    class Knob:
        name = "knob"

        @classmethod
        def build(cls, options, ctx: Size):
            return ("knob", options, ctx)

    # its own options, built and checked; another class's options are not its own
    assert reg.build("Dial", {"turns": 3}, Size(2)) == ("dial", Dial.Options(3), Size(2))
    assert reg.build("knob", {"turns": 3}) == ("knob", None, Size(1))  # the context's defaults
    with pytest.raises(InputError, match="turns must be >= 0"):
        reg.build("knob", {"turns": -1})  # every option is checked, whichever class is built
    with pytest.raises(InputError, match="unknown widget option 'colour'"):
        reg.build("dial", {"colour": "red"})
    with pytest.raises(TypeError, match="widget: build takes a Size, got NoContext"):
        reg.build("dial", None, NoContext())  # another registry's context


def test_a_registry_context_is_a_frozen_dataclass_and_one_without_defaults_must_be_given():
    from dataclasses import dataclass

    from interp_heads.registry import Registry

    @dataclass
    class Loose:
        size: int = 1

    with pytest.raises(TypeError, match="frozen dataclass"):
        Registry("widget", context=Loose)
    with pytest.raises(TypeError, match="frozen dataclass"):
        Registry("widget", context=dict)

    @dataclass(frozen=True)
    class Needed:
        size: int

    reg = Registry("widget", context=Needed)

    @reg.register
    class Dial:
        name = "dial"

        @classmethod
        def build(cls, options, ctx: Needed):
            return ctx.size

    assert reg.build("dial", None, Needed(4)) == 4
    with pytest.raises(TypeError, match="widget: build needs a Needed"):
        reg.build("dial")


def test_every_built_in_variant_is_built_by_its_registry():
    from interp_heads.interventions.kinds import KINDS
    from interp_heads.interventions.selections import SELECTIONS, SelectionContext
    from interp_heads.metrics.base import MetricContext
    from interp_heads.metrics.registry import METRICS
    from interp_heads.studies import STUDIES
    from interp_heads.studies.base import StudyContext

    scale = KINDS.build("scale", {"scale_factor": 0.5})
    assert scale.options.scale_factor == 0.5
    ctx = SelectionContext(((0, 0), (0, 1), (1, 0), (1, 1)), 2, 2, "t")
    randomk = SELECTIONS.build("randomk", {"exclude_top": True}, ctx)
    assert randomk.options.exclude_top and not set(randomk.select(2)) & {(0, 0), (0, 1)}
    assert METRICS.build("accuracy", {"comet_model": "x"}, MetricContext(False)).name == "accuracy"
    with pytest.raises(TypeError, match="selection: build needs a SelectionContext"):
        SELECTIONS.build("topk")
    claim = STUDIES.build("claim", None, StudyContext({"task": "t.jsonl", "k": "7"}))
    assert claim.param("k") == 7 and claim.param("task") == "t.jsonl"
    with pytest.raises(TypeError):  # the parameters are held read-only
        StudyContext({"k": "7"}).params["k"] = "8"


def _registries() -> list[tuple[str, str]]:
    """``(module, variable)`` of every ``NAME = Registry(...)`` (or a subclass named
    ``...Registry``) in the package (its AST), so a registry added later is checked too."""
    import ast

    from tests.helpers import ROOT

    package = ROOT / "interp_heads"
    found = []
    for path in sorted(package.rglob("*.py")):
        module = ".".join(("interp_heads", *path.relative_to(package).with_suffix("").parts))
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            target = (
                node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
            )
            value = getattr(node, "value", None)
            if (
                isinstance(value, ast.Call)
                and str(getattr(value.func, "id", "")).endswith("Registry")
                and isinstance(target, ast.Name)
            ):
                found.append((module.removesuffix(".__init__"), target.id))
    return found


def test_the_registries_are_found():
    found = {name for _, name in _registries()}
    assert {"KINDS", "METHODS", "METRICS", "EXECUTORS", "SELECTIONS", "BACKENDS"} <= found
    assert {"STUDIES", "STEPS", "FAMILIES"} <= found


@pytest.mark.parametrize(("module", "name"), _registries())
def test_every_registered_class_is_built_from_its_options_and_its_registrys_context(module, name):
    """One build shape: every built-in class a registry holds has the classmethod
    ``build(cls, options, ctx)`` (no other parameter, no default) with ``ctx`` annotated as that
    registry's context, a frozen dataclass; a registry of records builds nothing."""
    import dataclasses
    import inspect
    from importlib import import_module

    parent = module.rsplit(".", 1)[0]
    import_module(parent)  # the package registers its built-ins
    reg = getattr(import_module(module), name)
    assert dataclasses.is_dataclass(reg.context) and reg.context.__dataclass_params__.frozen
    built_in = [c for c in reg.classes() if getattr(c, "__module__", "").startswith(parent)]
    assert built_in, f"{module}.{name}: no built-in entry"
    for item in built_in:
        if not isinstance(item, type):  # a record (a pipeline step, a model family)
            assert not hasattr(item, "build"), f"{name} {item.name}: a record that builds"
            continue
        raw = inspect.getattr_static(item, "build")
        assert isinstance(raw, classmethod), f"{name} {item.name}: build is no classmethod"
        params = list(inspect.signature(raw.__func__).parameters.values())
        assert [p.name for p in params] == ["cls", "options", "ctx"], f"{name} {item.name}"
        assert all(p.kind is p.POSITIONAL_OR_KEYWORD and p.default is p.empty for p in params), (
            f"{name} {item.name}: a parameter with a default or of another kind"
        )
        hint = params[2].annotation
        where = inspect.unwrap(raw.__func__).__globals__  # under jaxtyping's hook: a wrapper
        hint = eval(hint, where) if isinstance(hint, str) else hint
        assert hint is reg.context, f"{name} {item.name}: ctx is {hint!r}, not {reg.context!r}"
