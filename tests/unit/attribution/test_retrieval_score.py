"""retrieval_score (Wu et al. 2024): an induction head copying a needle scores 1; bad input fails."""

from __future__ import annotations

import pytest

from interp_heads.attribution import attribute_heads
from interp_heads.attribution.retrieval import needle_span, retrieval_heads, retrieval_scores
from interp_heads.config.run_config import RunConfig
from interp_heads.models.tl_compat import HAS_HOOKED
from interp_heads.tasks.schema import Example, Task
from interp_heads.testing.planted import PLANTED, planted_model
from tests.helpers import DATA

# the planted models are HookedTransformers built by hand; TransformerLens 4 (tl4 env) has none
hooked_only = pytest.mark.skipif(
    not HAS_HOOKED, reason="a planted HookedTransformer (no TL 4 twin)"
)

# "mQ abc.zQ" -> " abc": after the last Q, the planted induction head attends to the token after
# the earlier Q (" "), then after " " ("a"), ... : it copy-pastes every needle token.
NEEDLE = Task("needle", [Example("n0", "needle", "mQ abc.zQ", "abc")])


def test_needle_span_contiguous_and_fallback():
    assert needle_span([5, 1, 2, 3, 9, 1, 2, 3], [1, 2, 3]) == [1, 2, 3]
    assert needle_span([5, 3, 9, 1], [1, 2, 3]) == []
    assert needle_span([5, 6], [1]) == []


@hooked_only
def test_planted_induction_head_is_the_retrieval_head():
    model = planted_model()
    scores = attribute_heads(model, NEEDLE, "retrieval_score")
    assert scores.top(1) == [PLANTED["induction"]]
    assert float(scores.scores[PLANTED["induction"]]) == 1.0
    # the previous-token head attends to the token before: never the one being produced
    assert float(scores.scores[PLANTED["previous_token"]]) == 0.0
    assert retrieval_heads(scores)[0] == PLANTED["induction"]
    assert scores.provenance["rank_by"] == "signed" and scores.method == "retrieval_score"


def test_hand_count_on_tiny(tiny):
    """Scores are shares of needle tokens: multiples of 1/len(needle) on one prompt."""
    task = Task("t", [Example("a", "t", "The word is xyz. The word is", "xyz")])
    scores, used = retrieval_scores(tiny, task, "plain")
    n = len(" xyz")  # byte tokens of the answer after the prompt
    assert used == 1
    assert ((scores * n).round() - scores * n).abs().max() < 1e-6
    assert float(scores.min()) >= 0 and float(scores.max()) <= 1


def test_task_without_needle_fails(tiny):
    task = Task("math", [Example("m", "math", "What is 2 + 2?", "4")])
    with pytest.raises(ValueError, match="no prompt of task 'math' contains its answer"):
        attribute_heads(tiny, task, "retrieval_score")


def test_config_accepts_retrieval_score():
    assert RunConfig(attribution="retrieval_score").attribution == "retrieval_score"


def test_run_masks_retrieval_score_heads(tmp_path):
    """``run`` with attribution = "retrieval_score": TopK masks the highest retrieval scores."""
    import json
    import warnings

    import pandas as pd

    from interp_heads.cli import main

    data = DATA
    text = (data / "tiny.toml").read_text().replace("tests/data/", f"{data}/")
    text = text.replace('attribution = "atp"', 'attribution = "retrieval_score"')
    text = text.replace('selections = ["topk", "randomk", "layermatched"]', 'selections = ["topk"]')
    text += "" if HAS_HOOKED else '\nbackend = "bridge"\n'  # tl4 env: the tiny Llama on the bridge
    cfg = tmp_path / "r.toml"
    cfg.write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["run", "--config", str(cfg), "--out", str(tmp_path / "run"), "--quiet"]) == 0
    ranking = pd.read_csv(tmp_path / "run" / "ranking.csv")
    assert set(ranking.method) == {"retrieval_score"}
    top2 = ranking.sort_values("rank").label.head(2).tolist()
    assert top2[0] == ranking.sort_values("score", ascending=False, kind="stable").label.iloc[0]
    entry = json.loads(
        (tmp_path / "run" / "conditions" / "tiny_echo__TopK__k2__s0.json").read_text()
    )
    assert entry["heads"] == top2
