"""A shared generation store across sweeps: a condition another sweep generated under the same key
is read back, not generated (RandomK draws across rankings, everything across metrics and
references), the tables equal those of a sweep without the store, and a change of anything that
decides the tokens generates again."""

from __future__ import annotations

import json
import warnings
from dataclasses import asdict

import pandas as pd
import pytest
import torch

from interp_heads.execution.local import PlainExecutor
from interp_heads.heads import all_heads
from interp_heads.metrics import Accuracy, ChrF
from interp_heads.store.shared import SharedGenerations
from interp_heads.sweep.loop import SweepConfig, run_sweep
from interp_heads.tasks.schema import Example, Task


class Spy(PlainExecutor):
    """The plain executor, recording which conditions it was asked to generate."""

    def __init__(self, model):
        super().__init__(model)
        self.generated: list[tuple] = []

    def run(self, units):
        self.generated += [(u.meta["selection"], u.meta["k"], u.meta["seed"]) for u in units]
        return super().run(units)


def _task(name="toy", n=6):
    exs = [
        Example(id=str(i), task=name, prompt=f"say {w}", question=f"say {w}", answer=w)
        for i, w in enumerate("abcdefghij"[:n])
    ]
    return Task(name, exs)


RANK_A = all_heads(3, 4)[::-1]
RANK_B = all_heads(3, 4)


def _config(**changes) -> SweepConfig:
    base = dict(
        ks=[2, 4], seeds=2, ablation="mean", max_new_tokens=4, selections=["topk", "randomk"]
    )
    return SweepConfig(**{**base, **changes})


def _sweep(model, ranking=RANK_A, config=None, metrics=None, shared=None, tasks=None, **kw):
    spy = Spy(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a random model answers nothing right: low baselines
        result = run_sweep(
            model,
            tasks or {"toy": _task()},
            {"toy": ranking},
            config or _config(),
            metrics or [Accuracy(), ChrF()],
            progress=False,
            executor=spy,
            shared=shared,
            **kw,
        )
    return result, spy.generated


def _assert_same_tables(got, want):
    pd.testing.assert_frame_equal(got.records, want.records)
    pd.testing.assert_frame_equal(got.generations, want.generations)


def test_a_sweep_differing_only_in_ranking_generates_no_randomk_condition(tiny, tmp_path):
    shared = tmp_path / "shared"
    _, first = _sweep(tiny, RANK_A, shared=shared)
    assert len(first) == 1 + 2 * (1 + 2)  # baseline, then TopK and 2 RandomK draws at each k
    second, generated = _sweep(tiny, RANK_B, shared=shared)
    assert generated == [("TopK", 2, 0), ("TopK", 4, 0)]  # only the ranking's own conditions
    assert second.shared["hits"] == 5 and second.shared["generated"] == 2
    alone, _ = _sweep(tiny, RANK_B)  # no store: every condition generated
    _assert_same_tables(second, alone)


def test_a_sweep_differing_only_in_metric_and_reference_generates_nothing(tiny, tmp_path):
    shared = tmp_path / "shared"
    _sweep(tiny, shared=shared, metrics=[Accuracy()])
    other = _config(reference="unmasked")  # chrF against the unmasked answers: read back too
    second, generated = _sweep(tiny, config=other, metrics=[ChrF()], shared=shared)
    assert generated == [] and second.shared["generated"] == 0
    alone, _ = _sweep(tiny, config=other, metrics=[ChrF()])
    _assert_same_tables(second, alone)


def test_the_unmasked_answers_are_the_baseline_conditions_generations(tiny, tmp_path):
    shared = tmp_path / "shared"
    first, generated = _sweep(tiny, config=_config(reference="unmasked"), shared=shared)
    assert ("baseline", 0, 0) not in generated  # the unmasked answers were generated first
    assert first.shared["hits"] == 1


MASKED = [("TopK", 2, 0), ("RandomK", 2, 0), ("RandomK", 2, 1),
          ("TopK", 4, 0), ("RandomK", 4, 0), ("RandomK", 4, 1)]  # fmt: skip


@pytest.mark.parametrize(
    "change, unmasked_too",
    [
        ({"positions": "last"}, False),
        ({"positions": "generated"}, False),
        ({"ablation": "zero"}, False),
        ({"ablation": "scale"}, False),
        ({"max_new_tokens": 3}, True),
        ({"free_form": True}, True),
    ],
)
def test_a_change_of_what_decides_the_tokens_generates_again(tiny, tmp_path, change, unmasked_too):
    shared = tmp_path / "shared"
    _sweep(tiny, shared=shared)
    _, generated = _sweep(tiny, config=_config(**change), shared=shared)
    assert generated == [("baseline", 0, 0)] * unmasked_too + MASKED


def test_another_scale_factor_masks_again(tiny, tmp_path):
    shared = tmp_path / "shared"
    _sweep(tiny, config=_config(ablation="scale"), shared=shared)
    _, generated = _sweep(
        tiny, config=_config(ablation="scale", options={"scale_factor": 0.5}), shared=shared
    )
    assert generated == MASKED


def test_another_k_or_seed_generates_only_its_new_heads(tiny, tmp_path):
    shared = tmp_path / "shared"
    _sweep(tiny, config=_config(ks=[2], seeds=1), shared=shared)
    _, generated = _sweep(tiny, config=_config(ks=[2, 3], seeds=2), shared=shared)
    assert generated == [("RandomK", 2, 1), ("TopK", 3, 0), ("RandomK", 3, 0), ("RandomK", 3, 1)]


def test_another_batch_size_generates_everything_again(tiny, tmp_path):
    shared, zero = tmp_path / "shared", _config(ablation="zero")  # no values: batches alone
    _sweep(tiny, config=zero, shared=shared)
    _, generated = _sweep(tiny, config=zero, shared=shared, batch_size=4)
    assert len(generated) == 7


def test_another_prompt_generates_everything_again(tiny, tmp_path):
    shared, zero = tmp_path / "shared", _config(ablation="zero")
    _sweep(tiny, config=zero, shared=shared)
    task = _task()
    other = Task("toy", [*task.examples[:5], _task(n=7).examples[6]])  # one prompt replaced
    _, generated = _sweep(tiny, config=zero, shared=shared, tasks={"toy": other})
    assert len(generated) == 7


def test_other_weights_generate_everything_again(tiny, tmp_path):
    shared, zero = tmp_path / "shared", _config(ablation="zero")
    _sweep(tiny, config=zero, shared=shared)
    with torch.no_grad():
        tiny.blocks[0].attn.W_O.mul_(1.001)  # a weight changed in place
    _, generated = _sweep(tiny, config=zero, shared=shared)
    assert len(generated) == 7


def test_other_mean_values_mask_again(tiny, tmp_path):
    shared = tmp_path / "shared"
    _sweep(tiny, shared=shared)
    store = SharedGenerations(shared)
    from interp_heads.interventions.kinds.mean import Mean

    class Shifted(Mean):  # the same kind name, other replacement values
        def values(self, model, prompts, *, batch_size=32):
            return {
                k: v + 1.0 for k, v in super().values(model, prompts, batch_size=batch_size).items()
            }

    class ShiftedConfig(SweepConfig):  # frozen: another kind is another config
        def kind(self):
            return Shifted()

    cfg = ShiftedConfig(**asdict(_config()))
    _, generated = _sweep(tiny, config=cfg, shared=store)
    assert generated == MASKED


def test_a_damaged_shared_entry_is_warned_about_and_generated_again(tiny, tmp_path):
    from interp_heads.store import StoreWarning

    shared = tmp_path / "shared"
    first, _ = _sweep(tiny, shared=shared)
    for path in (shared / "generations").glob("*.json"):  # an answer edited: checksum wrong
        entry = json.loads(path.read_text())
        entry["generations"][0] += "x"
        path.write_text(json.dumps(entry))
    spy = Spy(tiny)
    with pytest.warns(StoreWarning, match="checksum"):
        again = run_sweep(tiny, {"toy": _task()}, {"toy": RANK_A}, _config(),
                          [Accuracy(), ChrF()], progress=False, executor=spy, shared=shared)  # fmt: skip
    assert len(spy.generated) == 7
    _assert_same_tables(again, first)
    _, generated = _sweep(tiny, shared=shared)  # rewritten whole
    assert generated == []


def test_the_mean_values_are_computed_once_for_the_runs_sharing_the_store(
    tiny, tmp_path, monkeypatch
):
    from interp_heads.interventions.kinds.mean import Mean

    calls = []
    plain = Mean.values
    monkeypatch.setattr(
        Mean, "values", lambda self, *a, **kw: calls.append(1) or plain(self, *a, **kw)
    )
    shared = tmp_path / "shared"
    _sweep(tiny, RANK_A, shared=shared)
    second, _ = _sweep(tiny, RANK_B, shared=shared)
    assert len(calls) == 1 and second.shared["values_read"] == 1
    alone, _ = _sweep(tiny, RANK_B)
    _assert_same_tables(second, alone)
    _sweep(tiny, RANK_B, shared=shared, batch_size=4)  # averaged in other batches: computed again
    assert len(calls) == 3


def test_per_prompt_values_round_trip_through_the_store(tiny, tmp_path):
    shared, resample = tmp_path / "shared", _config(ablation="resample")
    first, _ = _sweep(tiny, RANK_A, config=resample, shared=shared)
    again, generated = _sweep(tiny, RANK_B, config=resample, shared=shared)
    assert again.shared["values_read"] == 1 and ("RandomK", 2, 0) not in generated
    alone, _ = _sweep(tiny, RANK_B, config=resample)
    _assert_same_tables(again, alone)
