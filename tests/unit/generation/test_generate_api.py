"""``generate`` as a user calls it: one string, sampling options, arguments refused in one line."""

from __future__ import annotations

import pytest
import torch

from interp_heads.generation.decode import generate, generate_tokens
from interp_heads.generation.sampling import Sampling


def _hand_greedy(model, prompt: str, n: int) -> list[int]:
    """Greedy ids by hand: one full forward pass per token, no cache, no stop token."""
    tokens = model.to_tokens(prompt)
    out = []
    with torch.no_grad():
        for _ in range(n):
            nxt = int(model(tokens)[0, -1].argmax())
            out.append(nxt)
            tokens = torch.cat([tokens, torch.tensor([[nxt]])], dim=1)
    return out


def test_one_string_gives_one_answer_as_a_string(tiny):
    got = generate(tiny, "1 + 1 = ", 3, stop_at_eos=False)
    assert isinstance(got, str)
    assert got == tiny.tokenizer.decode(_hand_greedy(tiny, "1 + 1 = ", 3))
    assert generate_tokens(tiny, "1 + 1 = ", 3, stop_at_eos=False) == _hand_greedy(
        tiny, "1 + 1 = ", 3
    )
    assert generate(tiny, ["1 + 1 = "], 3, stop_at_eos=False) == [got]


PROMPTS = ["say hello there", "xyz", "one two three"]


def test_sampling_is_reproducible_with_a_seed_and_greedy_stays_the_default(tiny):
    kw = dict(stop_at_eos=False, batch_size=2)
    greedy = generate_tokens(tiny, PROMPTS, 8, **kw)
    assert greedy == [_hand_greedy(tiny, p, 8) for p in PROMPTS]
    text = [tiny.tokenizer.decode(ids, skip_special_tokens=True) for ids in greedy]
    assert generate(tiny, PROMPTS, 8, temperature=0.0, seed=3, **kw) == text
    hot = generate_tokens(tiny, PROMPTS, 8, sampling=Sampling(5.0, seed=1), **kw)
    assert hot == generate_tokens(tiny, PROMPTS, 8, sampling=Sampling(5.0, seed=1), **kw)
    assert hot != greedy
    assert hot != generate_tokens(tiny, PROMPTS, 8, sampling=Sampling(5.0, seed=2), **kw)
    hot_text = [tiny.tokenizer.decode(ids, skip_special_tokens=True) for ids in hot]
    assert generate(tiny, PROMPTS, 8, temperature=5.0, seed=1, **kw) == hot_text
    # top_p this small keeps only the most likely token: greedy again
    assert generate(tiny, PROMPTS, 8, temperature=5.0, top_p=1e-6, seed=1, **kw) == text


def test_top_p_draws_only_from_the_nucleus():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    gen = torch.Generator().manual_seed(0)
    picks = {int(Sampling(1.0, 0.7).pick(logits, gen)) for _ in range(300)}
    assert picks == {0, 1}  # 0.5 < 0.7, 0.5 + 0.3 >= 0.7: tokens 2 and 3 are never drawn
    picks = {int(Sampling(1.0, 1.0).pick(logits, gen)) for _ in range(300)}
    assert picks == {0, 1, 2, 3}


@pytest.mark.parametrize(
    "prompts, kw, match",
    [
        (["hi"], {"max_new_tokens": 10_000}, "max_new_tokens=10000 leaves no room"),
        (["x" * 200], {}, r"prompts\[0\] is 200 tokens; with max_new_tokens=10"),
        (["hi", "y" * 120], {"max_new_tokens": 9}, r"prompts\[1\] is 120 tokens"),
        ([""], {}, r"prompts\[0\] is empty"),
        (["hi"], {"batch_size": 0}, "batch_size must be an integer >= 1"),
        (["hi"], {"max_new_tokens": 0}, "max_new_tokens must be an integer >= 1"),
        (["hi"], {"temperature": -1.0}, "temperature must be"),
        (["hi"], {"temperature": 1.0, "top_p": 0.0}, r"top_p must be in \(0, 1\]"),
        (["hi"], {"top_p": 0.5}, "also pass a temperature"),
    ],
)
def test_bad_arguments_are_refused_before_generating(tiny, prompts, kw, match):
    n = kw.pop("max_new_tokens", 10)
    with pytest.raises(ValueError, match=match):
        generate(tiny, prompts, n, **kw)


@pytest.mark.parametrize(
    "prompts, kw, match",
    [
        ([1, 2], {}, r"prompts\[0\] must be a string"),
        (None, {}, "prompts must be a string or a list"),
        (["hi"], {"batch_size": 2.0}, "batch_size must be an integer"),
        (["hi"], {"batch_size": True}, "batch_size must be an integer"),
    ],
)
def test_wrong_types_are_refused_in_one_line(tiny, untyped, prompts, kw, match):
    with pytest.raises(ValueError, match=match):
        generate(tiny, prompts, 4, **kw)


def test_render_head_means_and_attribute_heads_refuse_bad_arguments(tiny, untyped):
    from interp_heads.attribution import attribute_heads
    from interp_heads.interventions.means import head_means
    from interp_heads.tasks.prompts import render
    from interp_heads.tasks.schema import Task

    with pytest.raises(ValueError, match="unknown prompt format"):
        render(tiny, ["hi"], fmt="xml")
    with pytest.raises(ValueError, match="batch_size must be an integer >= 1"):
        head_means(tiny, ["hi"], batch_size=0)
    with pytest.raises(ValueError, match="task must be a Task"):
        attribute_heads(tiny, "knowledge_recall")
    with pytest.raises(ValueError, match="has no examples"):
        attribute_heads(tiny, [])
    with pytest.raises(ValueError, match="has no examples"):
        attribute_heads(tiny, Task("t", []))
