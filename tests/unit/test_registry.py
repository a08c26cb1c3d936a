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
