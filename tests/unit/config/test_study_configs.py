"""The study's protocol configs: the same protocol and probe as configs/cognitive_mirrors.toml at
the paper's fractions of the heads and at its literal grid, each with the damage-matched k."""

from __future__ import annotations

import pytest

from interp_heads.config.run_config import RunConfig

SEED = "configs/cognitive_mirrors.toml"
GRIDS = {"configs/compare/fractions.toml": [4, 8, 17, 34], "configs/compare/literal.toml": [16, 32, 64, 128]}  # fmt: skip
SWEEP_KEYS = {"ks", "scaled_ks", "damage_matched"}


@pytest.mark.parametrize("path", GRIDS)
def test_grid_configs_are_the_seed_protocol_at_the_papers_k(path):
    cfg, seed = RunConfig.from_toml(path), RunConfig.from_toml(SEED)
    assert cfg.resolved_ks(270) == GRIDS[path] and cfg.damage_matched and cfg.elbow
    same = {k: v for k, v in cfg.to_dict().items() if k not in SWEEP_KEYS}
    assert same == {k: v for k, v in seed.to_dict().items() if k not in SWEEP_KEYS}
    fractions = [k / 1024 for k in (16, 32, 64, 128)]  # the paper's k of about 1,024 heads
    if "fractions" in path:
        assert cfg.resolved_ks(270) == [round(f * 270) for f in fractions]
