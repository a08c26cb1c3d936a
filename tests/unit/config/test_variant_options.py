"""The registered variants' options are config keys read from their ``Options`` dataclasses
(``interp_heads.config.options``): type, bounds, default, help and check come from the variant."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from interp_heads.config.run_config import RunConfig
from interp_heads.errors import PipelineError
from interp_heads.interventions.kinds import KINDS, Ablation, get_kind


def _flags(command: str) -> dict:
    from interp_heads.cli import build_parser

    sub = build_parser()._subparsers._group_actions[0].choices
    return {a.dest: a for a in sub[command]._actions}


@pytest.fixture
def kind_with_a_list_option():
    """A kind registered for one test, whose option is a list (a type no built-in option has)."""

    @KINDS.register
    class Clipped(Ablation):
        name = "clipped"

        @dataclass(frozen=True)
        class Options:
            clip_layers: list[int] = field(
                default_factory=lambda: [0], metadata={"help": "layers clipped"}
            )

            def __post_init__(self):
                if any(layer < 0 for layer in self.clip_layers):
                    raise ValueError("clip_layers must be layer indices >= 0")

    yield Clipped
    KINDS.unregister("clipped")


def test_a_kinds_option_is_a_key_flat_or_in_its_section_checked_by_the_kind(
    kind_with_a_list_option,
):
    flat = RunConfig.from_dict({"ablation": "clipped", "clip_layers": [1, 2]})
    sectioned = RunConfig.from_dict({"ablation": {"ablation": "clipped", "clip_layers": [1, 2]}})
    assert flat.option("clip_layers") == sectioned.clip_layers == [1, 2]
    assert RunConfig().option("clip_layers") == [0]  # the field's default (its factory)
    with pytest.raises(PipelineError, match="clip_layers must be layer indices"):
        RunConfig(clip_layers=[-1])  # the kind's own __post_init__
    with pytest.raises(PipelineError, match="clip_layers"):
        RunConfig(clip_layers="x")  # the field's type
    with pytest.raises(PipelineError, match=r"\[sweep\] has no key 'clip_layers'"):
        RunConfig.from_dict({"sweep": {"clip_layers": [1]}})
    assert flat.sweep_config([1], {}).kind().options.clip_layers == [1, 2]


def test_a_kinds_option_is_in_the_digests_only_away_from_its_default(kind_with_a_list_option):
    plain = RunConfig(ablation="mean")
    assert RunConfig(ablation="mean", clip_layers=[0]).digest() == plain.digest()
    assert RunConfig(ablation="mean", clip_layers=[3]).digest() != plain.digest()
    sweep = RunConfig(ablation="clipped", clip_layers=[3]).sweep_config([1], {})
    assert sweep.to_dict()["clip_layers"] == [3]
    assert sweep.mask_key() == {"clip_layers": [3]}  # the resume key holds every option


def test_a_kinds_option_is_a_flag_of_ablate_and_a_keyword_of_mask_heads(kind_with_a_list_option):
    flag = _flags("ablate")["clip_layers"]
    assert flag.option_strings == ["--clip-layers"] and flag.help == "layers clipped"
    assert _flags("ablate")["scale_factor"].option_strings == ["--scale-factor"]
    assert get_kind("clipped", clip_layers=[2], scale_factor=0.5).options.clip_layers == [2]
    assert get_kind("scale", clip_layers=[2], scale_factor=0.5).options.scale_factor == 0.5


def test_an_option_nobody_declares_is_refused_by_config_and_api():
    from interp_heads.errors import InputError

    with pytest.raises(PipelineError, match="unknown key.*no_such_option"):
        RunConfig.from_dict({"no_such_option": 1})
    with pytest.raises(InputError, match="unknown ablation kind option 'no_such_option'"):
        get_kind("scale", no_such_option=1)


def test_a_second_kind_cannot_give_a_taken_option_another_default():
    class Other(Ablation):
        name = "other_scale"

        @dataclass(frozen=True)
        class Options:
            scale_factor: float = 0.5

    with pytest.raises(ValueError, match="option 'scale_factor' is declared by 'scale'"):
        KINDS.register(Other)
    assert "other_scale" not in KINDS


def test_a_methods_option_is_a_key_with_its_bounds_and_its_methods_rule():
    config = RunConfig(attribution="ablation_ig", steps=2)
    assert config.option("steps") == 2 and config.method_options().steps == 2
    assert RunConfig(attribution="ablation_ig").method_options().steps == 8
    with pytest.raises(PipelineError, match="steps"):
        RunConfig(attribution="ablation_ig", steps=0)  # Pos: > 0
    with pytest.raises(PipelineError, match="steps needs attribution 'ablation_ig'"):
        RunConfig(attribution="atp", steps=4)
    base = RunConfig(attribution="ablation_ig").digest()
    assert RunConfig(attribution="ablation_ig", steps=8).digest() == base
    assert config.digest() != base


def test_attribute_has_a_flag_for_each_option_of_a_method_that_ranks_one_task():
    flags = _flags("attribute")
    for name in ("steps", "rivals", "exact_layers", "lookahead"):
        assert flags[name].option_strings == ["--" + name.replace("_", "-")]
    assert flags["steps"].default == 8
    assert "probe_epochs" not in flags  # the probe ranks several tasks: a run's, not attribute's


def test_selection_metric_and_executor_options_are_keys_of_their_sections():
    cfg = RunConfig.from_dict({
        "model": "tiny", "tasks": ["retrieval"],
        "sweep": {"exclude_top": True},
        "metrics": {"comet_model": "some/checkpoint"},
        "placement": {"executor": "ray", "n_workers": 2},
    })  # fmt: skip
    assert (cfg.exclude_top, cfg.comet_model, cfg.n_workers) == (True, "some/checkpoint", 2)
    assert cfg.sweep_config([2], {"retrieval": "plain"}).options["exclude_top"] is True
    with pytest.raises(PipelineError, match=r"\[sweep\] has no key .n_workers."):  # its own section
        RunConfig.from_dict({"model": "tiny", "tasks": ["retrieval"], "sweep": {"n_workers": 2}})
    changed = cfg.changed({"n_workers": 3})  # a changed copy, checked as in a file
    assert (changed.option("n_workers"), cfg.option("n_workers")) == (3, 2)
    with pytest.raises(PipelineError, match="n_workers"):
        cfg.changed({"n_workers": 0})


def test_an_option_kept_in_a_digest_stays_there_at_its_default():
    """``comet_model`` (run digest) and ``exclude_top`` (sweep digest) were plain keys of those
    digests before they were options: folders made then must keep resuming."""
    from interp_heads.sweep.config import SweepConfig

    base = {"model": "tiny", "tasks": ["retrieval"]}
    assert "comet_model" in RunConfig(**base).to_dict()
    at_default = RunConfig(**base).digest()
    assert RunConfig(**base, comet_model=None).digest() == at_default
    assert RunConfig(**base, comet_model="x/y").digest() != at_default
    assert RunConfig(**base, n_workers=4, ray_address="auto").digest() == at_default  # placement
    assert SweepConfig(ks=[2]).to_dict()["exclude_top"] is False
    assert SweepConfig(ks=[2], options={"exclude_top": True}).to_dict()["exclude_top"] is True
    with pytest.raises(Exception, match="unknown sweep option 'n_workers'"):
        SweepConfig(ks=[2], options={"n_workers": 2})
