"""``reference = "unmasked"`` and free-form generation on the tiny model.

The unmasked answers are the sweep's own unmasked condition; chrF against them equals sacrebleu's
chrF computed here; they are stored and reused; packed equals plain; the defaults keep today's keys.
"""

from __future__ import annotations

import warnings

import pytest
import sacrebleu

from interp_heads.errors import InputError
from interp_heads.generation.decode import generate
from interp_heads.heads import all_heads
from interp_heads.metrics import Accuracy, ChrF, MetricItem
from interp_heads.metrics.base import first_line
from interp_heads.metrics.reference import VersusUnmasked, with_reference
from interp_heads.sweep.loop import SweepConfig, run_sweep
from interp_heads.tasks.prompts import render
from interp_heads.tasks.schema import Example, Task


def _task(n=6):
    exs = [
        Example(str(i), "toy", f"say {w}", w, question=f"say {w}")
        for i, w in enumerate("abcdefgh"[:n])
    ]
    return Task("toy", exs)


def _sweep(model, cfg, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the random model gets nothing right
        return run_sweep(
            model, {"toy": _task()}, {"toy": all_heads(3, 4)[::-1]}, cfg,
            metrics=[Accuracy(), ChrF()], progress=False, batch_size=4, **kw,
        )  # fmt: skip


def _cfg(**over):
    d = dict(ks=[2, 6], seeds=1, max_new_tokens=6, selections=["topk", "randomk"])
    d.update(over)
    return SweepConfig(**d)


def _by(res, metric):
    rec = res.records[res.records.metric == metric]
    return {(r.selection, r.k, r.example_id): r.value for r in rec.itertuples()}


def test_unmasked_reference_is_the_unmasked_condition_and_chrf_matches_sacrebleu(tiny, tmp_path):
    res = _sweep(tiny, _cfg(reference="unmasked"), out_dir=tmp_path)
    gens = res.generations
    base = gens[gens.selection == "baseline"].set_index("example_id").generation
    prompts = render(tiny, [e.prompt for e in _task()], fmt="auto")
    direct = generate(tiny, prompts, 6, batch_size=4, stop_at_newline=True)
    assert [first_line(g) for g in base] == [first_line(g) for g in direct]
    labels = set(res.records[res.records.metric == "chrf"].label)
    assert labels == {"chrF vs unmasked"} or all(lbl.endswith(" vs unmasked") for lbl in labels)
    chrf = _by(res, "chrf")
    for row in gens.itertuples():
        want = sacrebleu.sentence_chrf(
            first_line(row.generation), [first_line(base[row.example_id])]
        )
        assert abs(chrf[(row.selection, row.k, row.example_id)] - want.score / 100) < 1e-9
    assert all(v == 1.0 for (sel, _, _), v in chrf.items() if sel == "baseline")
    gold = _by(res, "accuracy")  # accuracy keeps the gold answer
    assert gold == _by(_sweep(tiny, _cfg()), "accuracy")


def test_unmasked_answers_are_stored_and_reused(tiny, tmp_path, monkeypatch):
    _sweep(tiny, _cfg(reference="unmasked"), out_dir=tmp_path)
    entry = tmp_path / "unmasked" / "toy.json"
    assert entry.exists()
    import interp_heads.execution.base as gen_mod  # the sweep's one generate call (Generation.run)

    calls = []
    real = gen_mod.generate
    monkeypatch.setattr(gen_mod, "generate", lambda *a, **k: calls.append(1) or real(*a, **k))
    _sweep(tiny, _cfg(reference="unmasked"), out_dir=tmp_path)
    assert calls == []  # the stored answers and conditions were reused
    _sweep(tiny, _cfg(reference="unmasked", max_new_tokens=5), out_dir=tmp_path, force=True)
    assert calls  # other generation settings: regenerated


def test_packed_equals_plain_with_unmasked_reference_and_free_form(tiny):
    cfg = _cfg(reference="unmasked", free_form=True, ablation="scale", positions="last")
    plain = _sweep(tiny, cfg, pack_rows=0)
    packed = _sweep(tiny, cfg, pack_rows="auto")
    assert _by(plain, "chrf") == _by(packed, "chrf")
    cols = ["selection", "k", "example_id", "generation"]
    key = ["selection", "k", "example_id"]
    assert plain.generations[cols].sort_values(key).values.tolist() == (
        packed.generations[cols].sort_values(key).values.tolist()
    )


def test_free_form_generates_past_the_first_line_and_scores_the_whole_answer(tiny):
    prompts = render(tiny, [e.prompt for e in _task()], fmt="auto")
    res = _sweep(tiny, _cfg(free_form=True, max_new_tokens=12))
    base = res.generations[res.generations.selection == "baseline"].generation.tolist()
    assert base == generate(tiny, prompts, 12, batch_size=4, stop_at_newline=False)
    chrf = _by(res, "chrf")
    for ex, g in zip(_task(), base, strict=True):
        want = sacrebleu.sentence_chrf(" ".join(g.split()), [ex.answer]).score / 100
        assert abs(chrf[("baseline", 0, ex.id)] - want) < 1e-9


def test_defaults_keep_todays_keys():
    from interp_heads.config.run_config import RunConfig

    assert SweepConfig(ks=[2]).to_dict() == SweepConfig(ks=[2], reference="gold").to_dict()
    assert "reference" not in SweepConfig(ks=[2]).to_dict()
    assert "free_form" not in SweepConfig(ks=[2]).to_dict()
    base = RunConfig(model="tiny").digest()
    assert RunConfig(model="tiny", reference="gold", free_form=False).digest() == base
    assert RunConfig(model="tiny", reference="unmasked").digest() != base


def test_bad_reference_and_missing_unmasked_are_refused():
    with pytest.raises(InputError, match="unknown reference"):
        with_reference([ChrF()], "silver")
    with pytest.raises(InputError, match="no unmasked answer"):
        VersusUnmasked(ChrF()).score([MetricItem("q", "a", "a")])
    wrapped = with_reference([Accuracy(), ChrF()], "unmasked")
    assert [type(m).__name__ for m in wrapped] == ["Accuracy", "VersusUnmasked"]
