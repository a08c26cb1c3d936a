"""A run folder written by main before ``run/`` existed (``tests/data/golden/run_tiny_main``)
resumes and reports under this code with the same results: the resumed run keeps every stored
sweep condition byte for byte and its tables equal the tiny golden outputs."""

from __future__ import annotations

import shutil

from interp_heads.cli import main
from interp_heads.report import load_run
from interp_heads.run import Run
from interp_heads.testing.tiny import assert_matches_golden
from tests.helpers import DATA, ROOT

GOLDEN = DATA / "golden" / "run_tiny_main"


def _files(folder):
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_folder_of_main_resumes_and_reports_unchanged(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # the folder's config names its task file from the repository root
    copy = tmp_path / "run"
    shutil.copytree(GOLDEN, copy)
    before = _files(copy)
    assert main(["report", str(copy)]) == 0
    assert (copy / "index.html").is_file()
    assert main(["run", "--config", "tests/data/tiny.toml", "--out", str(copy), "--quiet"]) == 0
    after = _files(copy)
    conditions = [p for p in before if p.parts[0] == "conditions"]  # 16 and config.json
    assert len(conditions) == 17 and all(after[p] == before[p] for p in conditions)
    assert_matches_golden(copy, DATA / "golden" / "tiny")
    run, loaded = Run.open(copy), load_run(copy)
    assert run.manifest.steps == run.manifest.plan  # every step done
    assert set(loaded) == set(run.pieces()) and loaded["summary"].equals(run.summary)
