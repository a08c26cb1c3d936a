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

    from interp_heads.registry import Registry

    reg = Registry("widget")

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
        def build(cls, options, **context):
            return ("dial", options, context)

    @reg.register
    class Knob:
        name = "knob"

        @classmethod
        def build(cls, options, **context):
            return ("knob", options, context)

    # its own options, built and checked; another class's options are not its own
    assert reg.build("Dial", {"turns": 3}, size=2) == ("dial", Dial.Options(3), {"size": 2})
    assert reg.build("knob", {"turns": 3}) == ("knob", None, {})
    with pytest.raises(InputError, match="turns must be >= 0"):
        reg.build("knob", {"turns": -1})  # every option is checked, whichever class is built
    with pytest.raises(InputError, match="unknown widget option 'colour'"):
        reg.build("dial", {"colour": "red"})


def test_every_built_in_variant_is_built_by_its_registry():
    from interp_heads.interventions.kinds import KINDS
    from interp_heads.interventions.selections import SELECTIONS, SelectionContext
    from interp_heads.metrics.registry import METRICS

    scale = KINDS.build("scale", {"scale_factor": 0.5})
    assert scale.options.scale_factor == 0.5
    ctx = SelectionContext(((0, 0), (0, 1), (1, 0), (1, 1)), 2, 2, "t")
    randomk = SELECTIONS.build("randomk", {"exclude_top": True}, ctx=ctx)
    assert randomk.options.exclude_top and not set(randomk.select(2)) & {(0, 0), (0, 1)}
    assert METRICS.build("accuracy", {"comet_model": "x"}, allow_fallback=False).name == "accuracy"
