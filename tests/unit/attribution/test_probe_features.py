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


class _NoPrefix:
    """What a backend without prompt prefixes gives (``bridge``): every batch generated whole."""

    def __len__(self):
        return 0

    def get(self, tokens, mask):
        return None


@pytest.fixture(params=["shared prefix", "whole prompts"])
def prefix_mode(request, monkeypatch):
    if request.param == "whole prompts":
        monkeypatch.setattr(pf, "shared_prefixes", lambda *a, **k: _NoPrefix())
    return request.param


@pytest.mark.parametrize("max_new_tokens", [7, 1])
def test_generated_features_are_z_where_the_generated_answer_tokens_are_fed_back(
    tiny, max_new_tokens, prefix_mode
):
    """Read during the unmasked generation, from the shared prompt pass or not. The reference:
    TransformerLens' own cache of one forward pass over prompt + generated tokens, at the
    tokens the study's rule chooses (one generated token: nothing fed back, the last prompt
    token)."""
    from interp_heads.generation.decode import generate_tokens

    prompts = ["say a", "say bb then", "c", "say d and more words", "e f"]
    ex = [Example(str(i), "t", p, "gold") for i, p in enumerate(prompts)]
    tasks = [Task("t", ex[:3]), Task("u", ex[3:])]
    got = pf.head_features(tiny, tasks, "plain", position="generated", layer_mean=False,
                           batch_size=2, max_new_tokens=max_new_tokens)  # fmt: skip
    gens = [
        g
        for t in tasks
        for g in generate_tokens(
            tiny, [e.prompt for e in t], max_new_tokens, batch_size=2, stop_at_newline=True
        )  # fmt: skip
    ]
    for i, (prompt, gen) in enumerate(zip(prompts, gens, strict=True)):
        p = tiny.to_tokens(prompt, move_to_device=False)[0]
        z = _plain_z(tiny, torch.cat([p, torch.tensor(gen, dtype=torch.long)]))
        pos = pf.answer_positions(tiny, gen)
        assert bool(pos) == (max_new_tokens > 1)
        want = z[len(p) + torch.tensor(pos)].mean(0) if pos else z[len(p) - 1]
        torch.testing.assert_close(got.features[i].reshape(want.shape), want, atol=2e-5, rtol=1e-4)


def test_generated_features_follow_rows_that_leave_the_batch(tiny, monkeypatch, prefix_mode):
    """Rows that stopped leave the batch mid-generation; each prompt's steps stay its own."""
    from interp_heads.generation import decode

    monkeypatch.setattr(decode, "DROP_EVERY", 1)  # drop at the first stopped row
    monkeypatch.setattr(pf, "answer_positions", lambda model, gen: list(range(len(gen) - 1)))
    prompts = ["say a", "say bb then", "c", "say d and more words"]
    free = decode.generate_tokens(tiny, prompts, 6, batch_size=4)
    stop = free[2][1]  # prompt 2 stops after its second token; the others go on or stop too
    monkeypatch.setattr(decode, "stop_token_ids", lambda model: {stop})
    gens = decode.generate_tokens(tiny, prompts, 6, batch_size=4)
    assert len({len(g) for g in gens}) > 1, "no row left the batch early"
    task = Task("t", [Example(str(i), "t", p, "gold") for i, p in enumerate(prompts)])
    got = pf.head_features(tiny, [task, Task("u", task.examples[:1])], "plain",
                           position="generated", layer_mean=False, batch_size=4,
                           max_new_tokens=6)  # fmt: skip
    for i, (prompt, gen) in enumerate(zip(prompts, gens, strict=True)):
        p = tiny.to_tokens(prompt, move_to_device=False)[0]
        z = _plain_z(tiny, torch.cat([p, torch.tensor(gen, dtype=torch.long)]))
        want = z[len(p) : len(p) + len(gen) - 1].mean(0) if len(gen) > 1 else z[len(p) - 1]
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
