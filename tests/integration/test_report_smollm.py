"""The whole pipeline on the embedded SmolLM2 (tiny sizes): run folder, report, resume is a no-op."""

from __future__ import annotations

import io
import json
import warnings
from pathlib import Path

import pandas as pd
import pytest

from interp_heads.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_smollm_run_writes_report_and_resumes(tmp_path, capsys):
    text = (ROOT / "configs" / "quick.toml").read_text()
    text = (
        text.replace('tasks = ["retrieval", "math_calculation"]', 'tasks = ["retrieval"]')
        .replace("max_examples = 64", "max_examples = 48")
        .replace("ks = [8, 32]", "ks = [8, 64]")
        .replace("n_rank = 4", "n_rank = 2")
        .replace("n_eval = 12", "n_eval = 4")
        .replace("seeds = 2", "seeds = 1")
    )
    cfg = tmp_path / "smoke.toml"
    cfg.write_text(text)
    out = tmp_path / "run"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["run", "--config", str(cfg), "--out", str(out), "--quiet"]) == 0, (
            capsys.readouterr().err
        )
    manifest = json.loads((out / "manifest.json").read_text())
    assert (
        manifest["status"] == "complete"
        and manifest["model"]["n_heads"] == 9
        and manifest["fmt"] == {"retrieval": "plain"}
    )
    base = pd.read_csv(out / "baseline.csv")
    assert base.accuracy.iloc[0] > 0
    summary = pd.read_parquet(out / "summary.parquet")
    top = summary.query("selection == 'baseline' and metric == 'accuracy'")["mean"].iloc[0]
    assert top == 1.0  # evaluated examples were filtered to correct ones
    assert {"seed_figure.html", "heatmap_retrieval.html"} <= {
        p.name for p in (out / "figures").iterdir()
    }
    stamp = (out / "sweep.parquet").read_bytes()
    assert (
        main(["run", "--config", str(cfg), "--out", str(out), "--quiet"]) == 0
    )  # resumes: nothing to redo
    pd.testing.assert_frame_equal(
        pd.read_parquet(out / "sweep.parquet"), pd.read_parquet(io.BytesIO(stamp))
    )
