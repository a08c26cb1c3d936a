"""A task without a declared prompt format is resolved in Python as on the command line:
measured once per model and task (plain against chat), recorded in ``task.meta``, printed once,
and used by every call that takes the task; calls that used other formats are warned about."""

from __future__ import annotations

import pytest

from interp_heads.tasks.checking import is_correct, normalize
from interp_heads.tasks.schema import Example, Task

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@pytest.fixture
def chat_tiny(tiny):
    """The tiny model with a chat template, so ``auto`` renders through it (as SmolLM2 does)."""
    tiny.tokenizer.chat_template = CHATML
    return tiny


def plain_only_task(model, n: int = 40) -> Task:
    """Examples whose answer is a word of the model's own plain-format answer that its chat-format
    answer lacks: plain scores 1, chat 0, whatever the answer length checked (5 or 16 tokens)."""
    from interp_heads import generate, render

    prompts = [f"Item {i:02d}: the word is" for i in range(n)]  # one length: no padding
    gens = {
        (f, m): generate(model, render(model, prompts, fmt=f), m)
        for f in ("plain", "chat")
        for m in (5, 16)
    }
    examples = []
    for i, prompt in enumerate(prompts):
        for word in normalize(gens["plain", 5][i].split("\n")[0]).split():
            plain = all(is_correct(gens["plain", m][i], word) for m in (5, 16))
            if plain and not any(is_correct(gens["chat", m][i], word) for m in (5, 16)):
                examples.append(Example(f"r{i}", "mine", prompt, word))
                break
    assert len(examples) >= 32
    return Task("mine", examples, source="mine.jsonl", sha256="abc")


def test_filter_correct_measures_the_format_once_and_records_it(chat_tiny, capsys):
    from interp_heads import filter_correct

    task = plain_only_task(chat_tiny)
    assert task.fmt == "auto"
    kept = filter_correct(chat_tiny, task)
    assert len(kept) == len(task)  # chat (what "auto" renders) would keep none
    assert task.meta["fmt"] == kept.fmt == "plain"
    assert task.meta["fmt_source"] == kept.meta["fmt_source"] == "measured"
    assert task.meta["fmt_info"]["accuracy"] == {"plain": 1.0, "chat": 0.0}
    assert kept.meta["filter"]["fmt"] == "plain"
    err = capsys.readouterr().err
    assert "prompt format: plain (measured: plain 1.00, chat 0.00 on 32 examples)" in err
    rank, rest = task.split(16)  # split before: the same file, not measured again
    filter_correct(chat_tiny, rest)
    assert rest.fmt == "plain" and "prompt format" not in capsys.readouterr().err


def test_every_call_on_the_task_uses_the_measured_format(chat_tiny, capsys):
    from interp_heads import attribute_heads, take_correct
    from interp_heads.tasks import evaluate_baseline

    task = plain_only_task(chat_tiny)
    rank, held_out = task.split(16)
    scores = attribute_heads(chat_tiny, rank, "gradxact")
    assert scores.provenance["fmt"] == "plain"
    assert take_correct(chat_tiny, held_out, 4).meta["filter"]["fmt"] == "plain"
    assert evaluate_baseline(chat_tiny, held_out).fmt == "plain"
    assert capsys.readouterr().err.count("prompt format:") == 1  # measured once


def test_a_sweep_renders_the_measured_format(chat_tiny):
    from interp_heads import RandomK, render, run_sweep
    from interp_heads.sweep.config import SweepConfig

    task = plain_only_task(chat_tiny).subset(n=4)
    ranking = RandomK(3, 4).select(12, seed=0)
    cfg = SweepConfig(ks=[1], seeds=1, max_new_tokens=5, metrics=["accuracy"])
    result = run_sweep(chat_tiny, [task], {"mine": ranking}, cfg, progress=False)
    plain = render(chat_tiny, [e.prompt for e in task], fmt="plain")
    assert list(result.prompts["mine"].values()) == plain


def test_a_declared_format_is_not_measured(chat_tiny, capsys):
    from interp_heads.tasks.prompt_format import task_format

    task = plain_only_task(chat_tiny)
    task.meta.update(fmt="chat", fmt_source="file")
    assert task_format(chat_tiny, task) == "chat"
    assert task_format(chat_tiny, task, "plain") == "plain"
    assert "prompt format" not in capsys.readouterr().err


def test_ranking_on_other_examples_than_filtered_warns(chat_tiny):
    from interp_heads import attribute_heads, filter_correct
    from interp_heads.tasks.prompt_format import FormatWarning

    kept = filter_correct(chat_tiny, plain_only_task(chat_tiny))
    with pytest.warns(FormatWarning, match="filtered .* in prompt format 'plain' but attribute"):
        attribute_heads(chat_tiny, kept.subset(n=4), "gradxact", fmt="chat")


def test_masking_a_ranking_made_in_another_format_warns(chat_tiny):
    from interp_heads import attribute_heads, run_sweep
    from interp_heads.sweep.config import SweepConfig
    from interp_heads.tasks.prompt_format import FormatWarning

    task = plain_only_task(chat_tiny).subset(n=4)
    scores = attribute_heads(chat_tiny, task, "gradxact", fmt="chat")
    cfg = SweepConfig(ks=[1], seeds=1, max_new_tokens=5, metrics=["accuracy"])
    with pytest.warns(FormatWarning, match="ranked in prompt format 'chat' but run_sweep uses"):
        run_sweep(chat_tiny, [task], {"mine": scores}, cfg, progress=False)


def test_measurement_settings_are_the_command_lines():
    from interp_heads.config.run_config import RunConfig
    from interp_heads.tasks import prompt_format as fmt

    config = RunConfig()
    assert (fmt.MEASURE_MAX_NEW_TOKENS, fmt.MEASURE_BATCH_SIZE) == (
        config.max_new_tokens,
        config.batch_size,
    )


def test_sufficiency_on_a_ranking_made_in_another_format_warns(chat_tiny):
    from interp_heads import attribute_heads, sufficiency
    from interp_heads.tasks.prompt_format import FormatWarning

    task = plain_only_task(chat_tiny).subset(n=3)
    scores = attribute_heads(chat_tiny, task, "gradxact", fmt="chat")
    with pytest.warns(FormatWarning, match="ranked in prompt format 'chat' but sufficiency") as got:
        sufficiency(chat_tiny, task, scores, seeds=1, metrics=["answer_logprob"])
    assert len([w for w in got if w.category is FormatWarning]) == 1  # said once


def test_an_emptied_task_says_what_the_filter_kept(chat_tiny):
    from interp_heads import filter_correct, run_sweep
    from interp_heads.sweep.config import SweepConfig

    task = plain_only_task(chat_tiny).subset(n=4)
    kept = filter_correct(chat_tiny, task, fmt="chat")
    cfg = SweepConfig(ks=[1], seeds=1, max_new_tokens=5, metrics=["accuracy"])
    with pytest.raises(ValueError, match="kept 0 of 4 in prompt format 'chat'"):
        run_sweep(chat_tiny, [kept], {"mine": [(0, 0)]}, cfg, progress=False)


def test_a_filter_that_keeps_nothing_warns(chat_tiny):
    from interp_heads import filter_correct

    task = plain_only_task(chat_tiny).subset(n=4)
    with pytest.warns(UserWarning, match="no example answered correctly .*kept 0 of 4 in .*'chat'"):
        filter_correct(chat_tiny, task, fmt="chat")
