"""A config's digests are fixed once run folders hold them: the run's ``config_digest``, the
sweep's digest (``conditions/config.json``) and the mask part of every condition's resume key of
each shipped config, and of configs that set the variants' options, equal the values recorded
before the variants declared their options themselves (a change would make every existing run
folder refuse to resume)."""

from __future__ import annotations

import pytest

from interp_heads.config.run_config import RunConfig
from tests.helpers import ROOT

# path: (config digest, sweep digest, mask key)
SHIPPED = {
    "bench/checks/equivalence/cm_small.toml": (
        "c7fb324ae67755d4",
        "3303c122c1a1d449",
        {"positions": "last", "factor": 0.0001},
    ),
    "bench/checks/equivalence/demo_small.toml": ("d3467a739452d019", "0533b9c0191861b6", None),
    "bench/checks/equivalence/quick_zero.toml": ("c49d555bb86c94c1", "73f61dfa5f3e2954", None),
    # batch_size 16 -> 48 (2026-12-05; the sweep digest and resume key unchanged): a run folder
    # of the earlier config needs --force
    "configs/cognitive_mirrors.toml": (
        "3b35e0d630dc5d79",
        "85997c4a2a6751de",
        {"positions": "generated", "factor": 0.0001},
    ),
    # the demo's batches (batch_size 32, batch_padding 512; 2026-12-05)
    "configs/compare/causal.toml": ("01f236d06555c040", "9a33e8b75f4c291d", None),
    # the study-format compare configs below: batch_size 16 -> 48 with it (config digest only)
    "configs/compare/fractions.toml": (
        "4e8f999d9dd7fe4f",
        "d4aab5f7c82c2d55",
        {"positions": "generated", "factor": 0.0001},
    ),
    "configs/compare/gold_reference.toml": (
        "82ed4eeda007e6b6",
        "9c157354785852fe",
        {"positions": "generated", "factor": 0.0001},
    ),
    "configs/compare/literal.toml": (
        "93cb99e026cecef6",
        "0c6d3b7c19c830b9",
        {"positions": "generated", "factor": 0.0001},
    ),
    "configs/compare/mean_ablation.toml": (
        "fefbd79061c74720",
        "7d11555a9e3e3e91",
        {"positions": "generated"},
    ),
    "configs/compare/positions_all.toml": (
        "124fe1e05cc8c970",
        "775f55069be8d54a",
        {"factor": 0.0001},
    ),
    "configs/heads.toml": ("35a079bddcc32beb", "bd41e842ca9b3ac8", None),
    "configs/heads_retrieval.toml": ("17a1cc3c68423dac", "ac7b15e240097de0", None),
    "configs/quick.toml": ("3d48d75503480fe1", "db154c68317a3762", None),
    # batch_padding = 512 (2026-12-05; every demo table and retrieval token the same): a runs/demo
    # of the earlier config needs --force
    "configs/seed_figure.toml": ("6176f466a6bf75dd", "d53e34c20b958b28", None),
    "configs/sufficiency.toml": ("6dd01bfa3c422180", "13680d7c254be9f2", None),
    # sufficiency_resamples = 3 (the patient search, 2026-12-07; the sweep digest unchanged): a run folder
    # of the earlier config needs --force (its searched sets are searched again in any case:
    # sufficiency_step._stored_sets refuses tables from before the patient search)
    "configs/sufficiency_search.toml": ("d4dc5904052a3f54", "13680d7c254be9f2", None),
    "tests/data/smollm_small.toml": ("36e49d92aa60fd37", "5dda9b2ef946cdc0", None),
    "tests/data/tiny.toml": ("0a34a87a133db1ac", "8a00869d79d56e98", None),
}
# settings: (config digest, sweep digest at ks [1, 2], mask key)
SET = {
    "scale_0.5": (
        dict(ablation="scale", scale_factor=0.5),
        ("08ee1c9755c1143e", "3c4c808ca4f02e3a", {"factor": 0.5}),
    ),
    "mean_scale_0.5": (
        dict(ablation="mean", scale_factor=0.5),
        ("a4e4d8b2cb8e33e4", "b1eec7c0ad001079", None),
    ),
    "default": ({}, ("01fed5fbf95b9d60", "ba70f713a588b17c", None)),
    "scale_default": (
        dict(ablation="scale"),
        ("e50d822ea78ceeb3", "62782b5dbd5d72b9", {"factor": 0.0001}),
    ),
    "probe_epochs": (
        dict(attribution="probe", tasks=["retrieval", "copy"], probe_epochs=5, probe_lr=1e-4),
        ("56966bffd34c3f0e", "ba70f713a588b17c", None),
    ),
    "atp_rivals": (
        dict(attribution="ablation_atp", rivals=2, lookahead=1, exact_layers=0),
        ("c9bf900b0b712437", "ba70f713a588b17c", None),
    ),
    "atp_rivals0": (
        dict(attribution="ablation_atp", rivals=0),
        ("27a68a24328107a4", "ba70f713a588b17c", None),
    ),
}


def _digests(config: RunConfig, ks: list[int] | None = None) -> tuple:
    sweep = config.sweep_config(ks or list(config.ks), {"t": "plain"})
    return config.digest(), sweep.digest(), sweep.mask_key()


@pytest.mark.parametrize("path", sorted(SHIPPED))
def test_a_shipped_configs_digests_and_resume_key_are_unchanged(path):
    assert _digests(RunConfig.from_toml(ROOT / path)) == SHIPPED[path]


@pytest.mark.parametrize("name", sorted(SET))
def test_the_digests_of_a_config_that_sets_variant_options_are_unchanged(name):
    settings, want = SET[name]
    assert _digests(RunConfig(**settings), [1, 2]) == want
