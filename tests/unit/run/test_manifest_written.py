"""A run under this code writes the manifest main wrote before the typed ``Manifest``: the same
keys in the same order, the same values, the same text, for the same config
(``tests/data/golden/run_tiny_main/manifest.json``, written by main with ``interp-heads run
--config tests/data/tiny.toml``). Only what differs between two runs of one config is masked:
the seconds each step took, the git commit and the installed packages' versions."""

from __future__ import annotations

import json

from interp_heads.cli import main
from tests.helpers import DATA, ROOT

GOLDEN = DATA / "golden" / "run_tiny_main" / "manifest.json"


def _masked(d: dict) -> dict:
    """``d`` with its machine-dependent values replaced in place (each key keeps its place)."""
    out = dict(d)
    out["git"] = "<git>"
    out["versions"] = "<versions>"
    out["timings"] = {k: "<s>" for k in d["timings"]}
    return out


def test_a_fresh_run_writes_the_manifest_main_wrote(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # the config names its task file from the repository root
    out = tmp_path / "run"
    assert main(["run", "--config", "tests/data/tiny.toml", "--out", str(out), "--quiet"]) == 0
    written, golden = (
        json.loads((out / "manifest.json").read_text()),
        json.loads(GOLDEN.read_text()),
    )
    assert list(written) == list(golden)  # the keys in main's order
    assert json.dumps(_masked(written), indent=1) == json.dumps(_masked(golden), indent=1)
    # the report rewrites the manifest (the files it wrote): still main's, key for key
    assert main(["report", str(out)]) == 0
    again = json.loads((out / "manifest.json").read_text())
    assert json.dumps(_masked(again), indent=1) == json.dumps(_masked(golden), indent=1)
