"""``interp_heads.studies.compare`` (docs/compare.md): each variant's config changes one of the
study's choices alone; a page without runs says so (the page on synthetic runs:
test_compare_verdict.py)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from interp_heads.studies import compare as compare_page
from tests.helpers import ROOT


@pytest.fixture(scope="module")
def mc():
    return compare_page


def _config(name: str) -> dict:
    from interp_heads.config.run_config import RunConfig

    return RunConfig.from_toml(ROOT / compare_page.VARIANTS[name]).to_dict()


def test_each_variant_changes_one_choice_alone(mc):
    seed = _config("seed")
    for name, key, value in [
        ("positions_all", "positions", "all"),
        ("mean_ablation", "ablation", "mean"),
        ("gold_reference", "metrics", ["cognitive_mirrors_accuracy_gold"]),
    ]:
        d = _config(name)
        # beside its choice, only the budget differs: the seed's ranking, fewer examples and k
        assert {k for k in d if d[k] != seed[k]} - mc.VARIANT_BUDGET == {key} and d[key] == value
        assert d["ranking"] == "runs/compare/seed" and d["n_eval"] <= seed["n_eval"]
    causal = _config("causal")
    # the same rows: the built-in tasks, which the seed runs in the study's prompt format
    assert [Path(t).stem for t in seed["tasks"]] == causal["tasks"]
    assert causal["n_rank"] == seed["n_rank"]
    assert (seed["attribution"], causal["attribution"]) == ("probe", "ablation_atp")


def test_seed_and_causal_can_decide():
    """At least 48 evaluated examples per task, 3 RandomK draws, LowK and both judged k
    (the elbow and 32) in both protocols."""
    for name in ("seed", "causal"):
        d = _config(name)
        assert d["n_eval"] >= 48 and d["seeds"] >= 3 and d["elbow"] and 32 in d["ks"]
        assert {"topk", "randomk", "lowk"} <= set(d["selections"])


def test_page_names_runs_not_made(mc, tmp_path):
    text = mc.markdown(mc.load_runs(tmp_path), tmp_path, None)
    assert "`seed`: the study's protocol (configs/cognitive_mirrors.toml); not run yet" in text
    assert text.startswith(mc.BEGIN) and text.endswith(mc.END)


def test_page_names_its_runs_folder_from_where_it_is_made(mc, tmp_path, monkeypatch):
    inside = tmp_path / "runs" / "compare"
    monkeypatch.chdir(tmp_path)  # made from the checkout: the page does not carry its path
    assert "under runs/compare:" in mc.markdown({}, inside, None)
    monkeypatch.chdir(ROOT)  # made from elsewhere: the folder as given
    assert f"under {inside}:" in mc.markdown({}, inside, None).replace("\\", "")


def test_needle_breakdown_without_an_accuracy_metric():
    """A run scored only by bleu_rouge_cosine (the seed protocol) still draws the breakdown."""
    from interp_heads.report.run import _breakdowns

    gens = pd.DataFrame(
        {"task": "retrieval", "example_id": ["a", "b"], "n_sentences": [4, 8], "depth": [0.0, 0.5]}
    )
    rows = [
        ("retrieval", sel, k, "bleu_rouge_cosine", "Seed accuracy", ex, v)
        for sel, k in [("baseline", 0), ("TopK", 4), ("RandomK", 4)]
        for ex, v in [("a", 1.0), ("b", 0.0)]
    ]
    records = pd.DataFrame(
        rows, columns=["task", "selection", "k", "metric", "label", "example_id", "value"]
    )
    figs = _breakdowns({"generations": gens, "records": records})
    assert (
        list(figs) == ["breakdown_retrieval"]
        and "bleu_rouge_cosine" in figs["breakdown_retrieval"].layout.title.text
    )
    assert _breakdowns({"generations": gens, "records": records.assign(metric="chrf")}) == {}
