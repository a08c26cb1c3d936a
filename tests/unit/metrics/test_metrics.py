"""Fast tests of the metrics package: accuracy, stand-ins, labels, resolve_metrics, errors."""

from __future__ import annotations

import math

import pytest

from interp_heads.metrics import (
    Accuracy,
    ChrF,
    CometMetric,
    Metric,
    MetricItem,
    MetricUnavailable,
    MiniLMCosine,
    resolve_metrics,
)
from interp_heads.metrics.comet_metric import TEST_MARKER, _display_name


@pytest.fixture(scope="module")
def cosine():
    return MiniLMCosine()


def test_accuracy_uses_checking_rule():
    items = [
        MetricItem("Capital of France?", "The capital of France is Paris.\nBlah", "Paris"),
        MetricItem("5+7?", "120", "12"),
        MetricItem("5+7?", "twelve", "12"),
        MetricItem("Largest ocean?", "The Pacific", "Pacific Ocean", aliases=("Pacific",)),
        MetricItem("q", "", "x"),
    ]
    assert Accuracy().score(items) == [1.0, 0.0, 1.0, 1.0, 0.0]
    assert Accuracy().score([]) == []


def test_cosine_identical_high_unrelated_low(cosine):
    s = cosine.score(
        [
            MetricItem("q", "Paris", "Paris"),
            MetricItem("q", "The capital of France is Paris.", "Paris"),
            MetricItem("q", "banana bread recipe", "quantum chromodynamics"),
            MetricItem("q", "   \n", "Paris"),
        ]
    )
    assert len(s) == 4 and all(0.0 <= x <= 1.0 and math.isfinite(x) for x in s)
    assert s[0] > 0.99
    assert s[2] < s[1] < s[0]
    assert s[3] == 0.0


def test_cosine_scores_first_line_only(cosine):
    a, b = cosine.score(
        [MetricItem("q", "Paris\nLondon Berlin", "Paris"), MetricItem("q", "Paris", "Paris")]
    )
    assert a == pytest.approx(b)


def test_chrf_range():
    s = ChrF().score([MetricItem("q", "Paris", "Paris"), MetricItem("q", "xyz", "Paris")])
    assert s[0] == pytest.approx(1.0) and 0.0 <= s[1] < 0.2


@pytest.mark.parametrize("metric", [Accuracy(), MiniLMCosine(), ChrF()])
def test_non_comet_metrics_never_claim_comet(metric: Metric):
    assert not metric.is_comet
    assert "comet" not in metric.name.lower()
    assert "not comet" in metric.label.lower() or "comet" not in metric.label.lower()


def test_resolve_falls_back_with_note(tmp_path, capsys):
    from interp_heads.metrics import MetricUnavailable

    with pytest.raises(MetricUnavailable, match="no such file"):  # a path named on purpose
        resolve_metrics(["accuracy", "comet"], comet_model=str(tmp_path / "missing"))
    metrics = resolve_metrics(["accuracy", "comet"], comet_model="nobody/no-such-comet-model")
    assert [m.name for m in metrics] == ["accuracy", "minilm_cosine"]
    fallback = metrics[1]
    assert not fallback.is_comet and "comet" not in fallback.name
    assert fallback.label.startswith("MiniLM cosine") and "not COMET" in fallback.label
    err = capsys.readouterr().err
    assert "COMET unavailable" in err and "--comet-model" in err and "stand-in" in err


def test_resolve_without_fallback_raises_one_line(tmp_path):
    with pytest.raises(MetricUnavailable) as info:
        resolve_metrics(["comet"], comet_model=str(tmp_path / "missing"), allow_fallback=False)
    assert "\n" not in str(info.value) and "missing" in str(info.value)


def test_resolve_names_and_duplicates():
    ms = resolve_metrics(["Accuracy", "chrf", "minilm_cosine", "accuracy"])
    assert [m.name for m in ms] == ["accuracy", "chrf", "minilm_cosine"]
    with pytest.raises(ValueError, match="unknown metric"):
        resolve_metrics(["bleurt"])


def test_comet_bad_paths_raise_one_line(tmp_path):
    for spec in (str(tmp_path / "nope.ckpt"), str(tmp_path)):  # missing file; folder without ckpt
        with pytest.raises(MetricUnavailable) as info:
            CometMetric(spec).load()
        assert "\n" not in str(info.value)
    with pytest.raises(MetricUnavailable):
        CometMetric(str(tmp_path / "nope.ckpt")).score([MetricItem("q", "a", "a")])


def test_comet_hub_name_offline_raises(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(MetricUnavailable, match="HF_HUB_OFFLINE"):
        CometMetric("interp-heads-test/no-such-comet-model").load()


def test_comet_labels(tmp_path):
    assert CometMetric("Unbabel/eamt22-cometinho-da").label == "COMET (Unbabel/eamt22-cometinho-da)"
    assert CometMetric("Unbabel/eamt22-cometinho-da").is_comet
    folder = tmp_path / "wmt22-comet-da"
    (folder / "checkpoints").mkdir(parents=True)
    (folder / "checkpoints" / "model.ckpt").write_bytes(b"")
    assert CometMetric(str(folder)).label == "COMET (wmt22-comet-da)"
    assert CometMetric(str(folder / "checkpoints" / "model.ckpt")).label == "COMET (wmt22-comet-da)"
    (folder / TEST_MARKER).write_text("x")
    assert "untrained test checkpoint" in CometMetric(str(folder)).label
    assert (
        "untrained test checkpoint" in CometMetric(str(folder / "checkpoints" / "model.ckpt")).label
    )
    hf = "/c/hub/models--Unbabel--wmt22-comet-da/snapshots/abc/checkpoints/model.ckpt"
    assert _display_name(hf) == "Unbabel/wmt22-comet-da"
