"""Attention patterns of chosen heads: the numbers are TransformerLens' own cache, the figure
shows them with the tokens as labels, and an ``attribute`` folder keeps them for its page."""

from __future__ import annotations

import json
import shutil
import warnings

import pytest
import torch

from interp_heads.figures.attention import attention_data, attention_figure, attention_patterns
from tests.helpers import DATA

PROMPTS = ["Repeat the word: cat\nAnswer: ", "Repeat the word: dog dog\nAnswer: "]
TASK = str(DATA / "tiny_echo.jsonl")


def test_patterns_are_the_cache_of_hook_pattern(tiny):
    data = attention_data(tiny, PROMPTS, ["L0H1", (2, 3)], max_tokens=10)
    assert data["heads"] == ["L0H1", "L2H3"]
    for text, rec in zip(PROMPTS, data["prompts"], strict=True):
        tokens = tiny.to_tokens(text)
        _, cache = tiny.run_with_cache(tokens)  # every hook: TransformerLens' own
        for (layer, head), label in (((0, 1), "L0H1"), ((2, 3), "L2H3")):
            want = cache["pattern", layer][0, head][-10:, -10:]
            got = torch.tensor(rec["patterns"][label])
            torch.testing.assert_close(got, want.float(), atol=1e-4, rtol=0)
        assert rec["tokens"] == tiny.to_str_tokens(tokens[0])[-10:]
        assert rec["n_tokens"] == tokens.shape[1] > 10


def test_figure_has_a_heatmap_per_head_and_prompt_and_token_ticks(tiny):
    fig = attention_patterns(tiny, PROMPTS, ["L0H1", "L1H2"], max_tokens=8)
    assert len(fig.data) == 2 * 2 and [t.visible for t in fig.data] == [True, True, False, False]
    first = attention_data(tiny, PROMPTS[0], ["L0H1"], max_tokens=8)["prompts"][0]["tokens"]
    ticks = list(fig.layout.xaxis.ticktext)
    assert len(ticks) == 8 and ticks[-1] == first[-1].replace(" ", "\u00b7")
    assert fig.layout.yaxis.autorange == "reversed"  # the query axis runs downwards
    buttons = fig.layout.updatemenus[0].buttons
    assert len(buttons) == 2 and buttons[1].args[0]["visible"] == [False, False, True, True]
    # a stored record (JSON) draws the same figure without the model
    data = json.loads(json.dumps(attention_data(tiny, PROMPTS, ["L0H1", "L1H2"], 8)))
    assert attention_figure(data).to_dict()["data"] == fig.to_dict()["data"]


def test_bad_arguments_name_themselves(tiny):
    with pytest.raises(ValueError, match="heads is empty"):
        attention_data(tiny, PROMPTS, [])
    with pytest.raises(ValueError, match="prompts is empty"):
        attention_data(tiny, [], ["L0H0"])
    with pytest.raises(ValueError, match="max_tokens"):
        attention_data(tiny, PROMPTS, ["L0H0"], max_tokens=0)
    with pytest.raises(ValueError):
        attention_data(tiny, PROMPTS, ["L9H0"])  # no layer 9 in the tiny model


def test_attribute_stores_patterns_and_report_redraws_them(tmp_path):
    from interp_heads.cli import main
    from interp_heads.report import build_report

    out = tmp_path / "a"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        argv = ["attribute", "--model", "tiny", "--task", TASK, "--no-filter", "--n-examples", "6"]
        assert main([*argv, "--out", str(out), "--quiet"]) == 0
    stored = json.loads((out / "attention.json").read_text())["tiny_echo"]
    ranking = [line.split(",")[2] for line in (out / "ranking.csv").read_text().splitlines()[1:]]
    assert stored["heads"] == ranking[:6] and len(stored["prompts"]) == 3
    assert stored["example_ids"] == ["t0", "t1", "t2"]
    copy = tmp_path / "copy"  # no model needed: the page is drawn from attention.json
    shutil.copytree(out, copy, ignore=shutil.ignore_patterns("index.html", "figures"))
    text = build_report(copy).read_text()
    assert "Attention patterns of the top heads" in text and 'id="fig-attention_tiny_echo"' in text
