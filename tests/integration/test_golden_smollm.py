"""Golden before/after test on the embedded SmolLM2 (``tests/data/smollm_small.toml``).

``tests/data/golden/smollm`` holds the outputs of that config made before the experiment layer was
reshaped (issue 9): the ranking, every generation and every table must stay the same.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from interp_heads.cli import main
from interp_heads.testing.tiny import assert_matches_golden

DATA = Path(__file__).parents[1] / "data"
CONFIG = DATA / "smollm_small.toml"

pytestmark = pytest.mark.slow


def test_smollm_run_matches_golden(tmp_path):
    out = tmp_path / "run"
    assert main(["run", "--config", str(CONFIG), "--out", str(out), "--quiet"]) == 0
    assert_matches_golden(out, DATA / "golden" / "smollm")
