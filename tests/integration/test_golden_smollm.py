"""Golden before/after test on the embedded SmolLM2 (``tests/data/smollm_small.toml``).

``tests/data/golden/smollm`` holds the outputs of that config made before the experiment layer was
reshaped: the ranking, every generation and every table must stay the same. On the
bridge backend (tl4 env) its math_calculation task must give the same (one task keeps CI short:
the bridge runs HF's eager attention and recomputes shared prefixes).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from interp_heads.cli import main
from interp_heads.models.tl_compat import HAS_BRIDGE, HAS_HOOKED
from interp_heads.testing.tiny import assert_matches_golden

DATA = Path(__file__).parents[1] / "data"
CONFIG = DATA / "smollm_small.toml"

pytestmark = pytest.mark.slow


@pytest.mark.skipif(not HAS_HOOKED, reason="the hooked backend (default env)")
def test_smollm_run_matches_golden(tmp_path):
    out = tmp_path / "run"
    assert main(["run", "--config", str(CONFIG), "--out", str(out), "--quiet"]) == 0
    assert_matches_golden(out, DATA / "golden" / "smollm")


@pytest.mark.skipif(not HAS_BRIDGE, reason="the bridge backend needs TL 4 (tl4 env)")
def test_smollm_on_the_bridge_matches_golden(tmp_path):
    text = CONFIG.read_text().replace(
        'tasks = ["retrieval", "math_calculation"]', 'tasks = ["math_calculation"]'
    )
    assert 'tasks = ["math_calculation"]' in text
    (tmp_path / "c.toml").write_text(text + '\nbackend = "bridge"\n')
    out = tmp_path / "run"
    argv = ["run", "--config", str(tmp_path / "c.toml"), "--out", str(out), "--quiet"]
    assert main(argv) == 0
    assert_matches_golden(out, DATA / "golden" / "smollm", tasks=["math_calculation"])
