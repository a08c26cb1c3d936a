"""``interp-heads score RUN --metrics comet``: the real COMET path over stored generations."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from interp_heads.cli import main
from interp_heads.metrics import CometMetric, MetricItem, build_offline_comet_checkpoint

pytestmark = pytest.mark.slow


def test_score_comet_equals_comet_on_the_same_items(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    ckpt = build_offline_comet_checkpoint(tmp_path / "comet")
    rows = [
        dict(task="t", selection=sel, seed=0, k=k, example_id="a", heads="",
             generation=gen, question="Capital of France?", answer="Paris")
        for sel, k, gen in [("baseline", 0, "Paris"), ("TopK", 2, "Berlin, I think")]
    ]  # fmt: skip
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text(json.dumps({"config_digest": "x"}))
    (run / "generations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["score", str(run), "--metrics", "comet", "--comet-model", str(ckpt)]) == 0
    table = pd.read_csv(run / "scores" / "comet.csv")
    items = [MetricItem(r["question"], r["generation"], r["answer"]) for r in rows]
    want = CometMetric(str(ckpt)).score(items)
    assert table["value"].tolist() == pytest.approx(want, abs=1e-6)
    assert table["label"].str.startswith("COMET").all()
