"""The real COMET code path (load_from_checkpoint + predict) on the untrained offline checkpoint."""

from __future__ import annotations

import math
import socket

import pytest

from interp_heads.metrics import CometMetric, MetricItem, build_offline_comet_checkpoint
from interp_heads.metrics import comet_metric as cm

ITEMS = [
    MetricItem("What is the capital of France?", "Paris\nIt is a big city.", "Paris"),
    MetricItem("What is 5 + 7?", "The answer is 12.", "12"),
    MetricItem("Who wrote Hamlet?", "Charles Dickens", "William Shakespeare"),
    MetricItem("What colour is the sky?", "", "blue"),
]


@pytest.fixture
def no_network(monkeypatch):
    """HF_HUB_OFFLINE=1 and any socket connection attempt fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"network access attempted: {args[1:] or kwargs}")

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.mark.slow
def test_offline_comet_checkpoint_end_to_end(no_network):
    folder = build_offline_comet_checkpoint()
    ckpt = folder / "checkpoints" / "model.ckpt"
    assert ckpt.is_file() and (folder / "hparams.yaml").is_file()
    assert "NOT COMET quality" in (folder / "README.md").read_text()

    cm._MODELS.pop(str(ckpt.resolve()), None)  # exercise load_from_checkpoint in this test
    metric = CometMetric(str(folder), batch_size=2, gpus=0)
    assert metric.is_comet and metric.name == "comet"
    assert "untrained test checkpoint" in metric.label

    first = metric.score(ITEMS)
    assert len(first) == len(ITEMS)
    assert all(math.isfinite(s) and 0.0 <= s <= 1.0 for s in first)
    assert metric.score(ITEMS) == first  # same inputs, same scores (cached model)

    cm._MODELS.pop(str(ckpt.resolve()), None)  # reloaded from disk: still the same scores
    again = CometMetric(str(ckpt), batch_size=4, gpus=0).score(list(reversed(ITEMS)))
    assert again[::-1] == pytest.approx(first, abs=1e-5)
    assert metric.score([]) == []
