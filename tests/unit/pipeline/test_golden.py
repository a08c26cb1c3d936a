"""Golden before/after test on the tiny model: the experiment layer's results must not change.

``tests/data/golden/tiny`` holds the outputs of ``interp-heads run --config tests/data/tiny.toml``
made before the experiment layer was reshaped. Regenerate them only for an intended change
of results: ``interp_heads.testing.tiny.save_golden(run_dir, "tests/data/golden/tiny")``.
"""

from __future__ import annotations

from interp_heads.cli import main
from interp_heads.testing.tiny import assert_matches_golden
from tests.helpers import DATA


def test_tiny_run_matches_golden(tmp_path):
    out = tmp_path / "run"
    assert main(["run", "--config", str(DATA / "tiny.toml"), "--out", str(out), "--quiet"]) == 0
    assert_matches_golden(out, DATA / "golden" / "tiny")
