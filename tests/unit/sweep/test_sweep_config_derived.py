"""``SweepConfig`` is derived from a run's ``RunConfig`` (one function, ``RunConfig.sweep_config``)
and frozen; the derived config is the one main made, field for field, digest included, so that
existing run folders resume.

``tests/data/sweep_configs_main.json`` was written by main (daf7c23) with
``bench/checks/sweep_config_reference.py`` (its docstring): every shipped config's sweep
config (its fields, ``to_dict()`` and digest), with the tasks all in one format and each in
its own. ``tests/data/golden/run_tiny_main`` is a run folder main wrote (its
``conditions/config.json`` holds the sweep's digest that resuming compares).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import FrozenInstanceError

import pytest

from interp_heads.config.run_config import RunConfig
from interp_heads.errors import InputError
from interp_heads.sweep.config import FROM_RUN_CONFIG, SweepConfig
from tests.helpers import DATA, ROOT

MAIN = json.loads((DATA / "sweep_configs_main.json").read_text())
GOLDEN = DATA / "golden" / "run_tiny_main"


def _derived(key: str) -> SweepConfig:
    path, fmts = key.split("|")
    cfg = RunConfig.from_toml(ROOT / path)
    if fmts == "same":
        return cfg.sweep_config(list(cfg.ks), {t: "plain" for t in cfg.tasks})
    return cfg.sweep_config(list(cfg.ks), {t: f"f{i}" for i, t in enumerate(cfg.tasks)})


def test_every_shipped_config_has_its_configs_and_data_toml_in_the_reference():
    shipped = {p.relative_to(ROOT).as_posix() for p in (ROOT / "configs").rglob("*.toml")}
    shipped |= {p.relative_to(ROOT).as_posix() for p in DATA.glob("*.toml")}
    assert shipped <= {key.split("|")[0] for key in MAIN}


@pytest.mark.parametrize("key", sorted(MAIN))
def test_the_derived_sweep_config_is_mains_field_for_field(key):
    derived, want = _derived(key), MAIN[key]
    assert dataclasses.asdict(derived) == want["fields"]
    assert derived.to_dict() == want["to_dict"]
    assert derived.digest() == want["digest"]


def test_a_folder_written_by_main_keeps_its_sweep_digest():
    manifest = json.loads((GOLDEN / "manifest.json").read_text())
    stored = json.loads((GOLDEN / "conditions" / "config.json").read_text())
    cfg = RunConfig.from_dict(manifest["config"])
    derived = cfg.sweep_config(manifest["ks"], {"tiny_echo": "plain"})
    assert derived.to_dict() == stored["config"]
    assert derived.digest() == stored["digest"]


def test_it_is_frozen_and_a_changed_one_is_checked_again():
    cfg = RunConfig.from_toml(DATA / "tiny.toml").sweep_config([2, 4], {"tiny_echo": "plain"})
    with pytest.raises(FrozenInstanceError):
        cfg.seeds = 3
    changed = dataclasses.replace(cfg, seeds=3, ablation="zero")
    assert (changed.seeds, changed.ablation, cfg.seeds, cfg.ablation) == (3, "zero", 2, "mean")
    with pytest.raises(InputError, match="unknown sweep option"):
        dataclasses.replace(cfg, options={"no_such_option": 1})


def test_the_fields_taken_from_the_run_config_are_its_keys_of_the_same_name():
    fields = {f.name for f in dataclasses.fields(SweepConfig)}
    assert set(FROM_RUN_CONFIG) <= set(RunConfig.keys()) & fields
    assert fields - set(FROM_RUN_CONFIG) == {"ks", "options", "fmt"}  # the computed ones
