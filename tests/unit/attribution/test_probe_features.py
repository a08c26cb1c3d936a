"""The study's probe features and labels: z read at the model's own generated answer tokens (up to
five, found as the study's ``find_subsequence`` finds them), and labels from the examples' skills."""

from __future__ import annotations

import pytest
import torch

from interp_heads.attribution import probe_features as pf
from interp_heads.attribution.probe import ProbeSettings, probe_heads
from interp_heads.errors import InputError
from interp_heads.heads import hook_z
from interp_heads.tasks.schema import Example, Task


def _ids(model, text):
    return model.to_tokens(text, prepend_bos=False, move_to_device=False)[0].tolist()


def test_answer_positions_are_the_json_answers_tokens_up_to_five(tiny):
    gen = _ids(tiny, 'ok [{"answer": "Rome"}]')
    start = len(_ids(tiny, 'ok [{"answer": "'))
    assert pf.answer_positions(tiny, gen) == list(range(start, start + 4))
    gen = _ids(tiny, '[{"answer": "Buenos Aires"}]')
    start = len(_ids(tiny, '[{"answer": "'))
    assert pf.answer_positions(tiny, gen) == list(range(start, start + 5))  # the first five
    gen = _ids(tiny, "Rome")  # no block: the whole generation, its last token never fed back
    assert pf.answer_positions(tiny, gen) == [0, 1, 2]


def test_find_subsequence_is_the_studys():
    assert pf.find_subsequence([5, 6, 7], [1, 5, 6, 9]) == 1  # without the last token
    assert pf.find_subsequence([4, 6, 7], [1, 5, 6, 7]) == 1  # without the first: start - 1
    assert pf.find_subsequence([4, 6, 8], [1, 5, 6, 7]) == 1  # without both
    assert pf.find_subsequence([4, 8], [1, 2, 3]) == -1


def _plain_z(model, tokens):
    _, cache = model.run_with_cache(tokens[None], names_filter=lambda n: n.endswith("hook_z"))
    return torch.stack([cache[hook_z(layer)][0] for layer in range(model.cfg.n_layers)], 1)


def test_generated_features_are_z_at_the_generated_answer_tokens(tiny, monkeypatch):
    """The unmasked model's generation (here fixed) is appended to the prompt; the feature is the
    mean of z where its answer tokens are the input, as the study's collector reads them."""
    from interp_heads.generation import decode

    answers = {"say a": '[{"answer": "Rome"}]', "say bb": 'so [{"answer": "Buenos Aires"}]'}
    answers |= {"say c": "x", "say d": '[{"answer": "Oslo"}]'}
    seen = []

    def fake_generate(model, texts, max_new_tokens, **kw):
        seen.append((max_new_tokens, kw.get("stop_after")))
        return [_ids(model, answers[t]) for t in texts]

    monkeypatch.setattr(decode, "generate_tokens", fake_generate)
    ex = [Example(str(i), "t", p, "gold") for i, p in enumerate(answers)]
    tasks = [Task("t", ex[:2]), Task("u", ex[2:])]
    got = pf.head_features(tiny, tasks, "plain", position="generated", layer_mean=False,
                           batch_size=3, max_new_tokens=7)  # fmt: skip
    assert seen and all(s == (7, None) for s in seen)
    for i, (prompt, answer) in enumerate(answers.items()):
        p, g = _ids(tiny, prompt), _ids(tiny, answer)
        z = _plain_z(tiny, torch.tensor(p + g))
        if answer == "x":  # one generated token: nothing fed back, the last prompt token
            want = z[len(p) - 1]
        else:
            word = answer.split('"')[-2]
            start = len(_ids(tiny, answer.split(word)[0]))
            want = z[len(p) + start : len(p) + start + min(5, len(word))].mean(0)
        torch.testing.assert_close(got.features[i].reshape(want.shape), want, atol=2e-5, rtol=1e-4)


def test_skill_labels_cover_every_skill_also_unswept_ones(tiny):
    def task(name, skills):
        exs = [Example(f"{name}{i}", name, f"q {name} {i}", "a", meta={"skill": s})
               for i, s in enumerate(skills)]  # fmt: skip
        return Task(name, exs, meta={"skill": skills[0]})

    swept = [task("r", ["Retrieval"] * 4), task("m", ["Math"] * 4)]
    other = task("i", ["Inference"] * 4)
    data = pf.head_features(tiny, [*swept, other], "plain", position="last", labels="skills")
    assert data.tasks == ["Retrieval", "Math", "Inference"]
    assert data.labels.tolist() == [0] * 4 + [1] * 4 + [2] * 4
    s = ProbeSettings(labels="skills", epochs=2)
    out = probe_heads(tiny, swept, "plain", position="last", settings=s, others=[other])
    assert set(out) == {"r", "m"} and out["m"].provenance["label"] == "Math"
    p = out["r"].provenance["probe"]
    assert p["tasks"] == ["Retrieval", "Math", "Inference"] and p["chance"] == round(1 / 3, 4)
    with pytest.raises(InputError, match="two or more distinct skills"):
        pf.head_features(tiny, [task("x", ["S"] * 2), task("y", ["S"] * 2)], "plain",
                         position="last", labels="skills")  # fmt: skip


def test_evaluated_rows_are_scored_and_the_probe_trains_on_every_rank_row(tiny):
    ex = lambda n, i: Example(f"{n}{i}", n, f"{n} prompt {i}", "a")  # noqa: E731
    ranks = [Task(n, [ex(n, i) for i in range(4)]) for n in "tu"]
    evals = [Task(n, [ex(n, i) for i in range(4, 7)]) for n in "tu"]
    out = probe_heads(tiny, ranks, "plain", position="last", settings=ProbeSettings(epochs=2),
                      evaluated=evals)  # fmt: skip
    p = out["t"].provenance["probe"]
    assert (p["rows"], p["n_train"], p["n_heldout"]) == ("evaluated", 8, 6)
