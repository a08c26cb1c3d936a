"""Condition-batched masks and packed sweeps equal one condition at a time, token for token."""

from __future__ import annotations

import json

import pytest
import torch

from interp_heads.execution.packed import PackedJob, generate_packed
from interp_heads.generation.decode import generate_tokens, tokenize_left_padded
from interp_heads.heads import all_heads
from interp_heads.interventions.masks import mask_heads
from interp_heads.interventions.means import head_means
from interp_heads.interventions.row_masks import RowMasks, mask_rows
from interp_heads.interventions.selections import RandomK
from interp_heads.metrics import Accuracy, ChrF
from interp_heads.sweep.loop import SweepConfig, SweepWarning, run_sweep
from interp_heads.tasks.schema import Example, Task

PROMPTS = [
    "a",
    "say hello there",
    "xyz",
    "one two three four five six",
    "q?",
    "the cat",
    "zz top",
    "hm",
]
OTHER = ["another task", "b", "cc dd ee ff gg", "last one here!"]


def _jobs(model, method):
    values = {
        "zero": None,
        "mean": head_means(model, PROMPTS),
        "resample": head_means(model, PROMPTS, per_prompt=True),
    }
    other = {
        "zero": None,
        "mean": head_means(model, OTHER),
        "resample": head_means(model, OTHER, per_prompt=True),
    }
    rk = RandomK(3, 4, salt="t")
    return [
        PackedJob(PROMPTS, [], values[method]),
        PackedJob(PROMPTS, [(2, 3), (1, 0)], values[method]),
        PackedJob(PROMPTS, rk.select(6, 0), values[method], seed=1),
        PackedJob(OTHER, rk.select(3, 1), other[method], seed=2),
        PackedJob(OTHER, all_heads(3, 4), other[method]),
    ]


@pytest.mark.parametrize("method", ["zero", "mean", "resample"])
@pytest.mark.parametrize("use_cache", [True, False])
def test_packed_generation_equals_one_condition_at_a_time(tiny, method, use_cache):
    jobs = _jobs(tiny, method)
    alone = []
    for job in jobs:
        with mask_heads(
            tiny, job.heads, method, values=job.values, seed=job.seed, warn_if_idle=False
        ):
            alone.append(
                generate_tokens(
                    tiny, job.prompts, 6, batch_size=3, use_cache=use_cache, stop_at_eos=False
                )
            )
    packed = generate_packed(
        tiny, jobs, method, 6, pack_rows=7, use_cache=use_cache, stop_at_eos=False
    )
    texts = [[tiny.tokenizer.decode(r, skip_special_tokens=True) for r in rows] for rows in alone]
    assert packed == texts
    assert len({tuple(map(tuple, rows)) for rows in alone[:3]}) == 3  # the masks differ in effect


def test_row_mask_equals_mask_heads_on_logits_with_padding(tiny):
    means = head_means(tiny, PROMPTS)
    conds = [
        ([], "mean", means, 0),
        ([(0, 1), (2, 2)], "mean", means, 0),
        ([(1, 3)], "zero", None, 0),
    ]
    tokens, mask = tokenize_left_padded(tiny, PROMPTS[:3])
    masks = RowMasks.build(tiny, conds)
    with torch.inference_mode(), mask_rows(tiny, masks) as handle:
        handle.rows = [2, 0, 1]
        got = tiny(tokens, attention_mask=mask)
    with torch.inference_mode():
        for row, c in enumerate([2, 0, 1]):
            heads, method, values, _ = conds[c]
            with mask_heads(tiny, heads, method, values=values, warn_if_idle=False):
                want = tiny(tokens, attention_mask=mask)[row]
            real = mask[row].bool()
            assert torch.equal(got[row][real], want[real])


def test_row_count_mismatch_and_cleanup(tiny):
    masks = RowMasks.build(tiny, [([(0, 0)], "zero", None, 0)])
    tokens, mask = tokenize_left_padded(tiny, PROMPTS[:2])
    with pytest.raises(ValueError, match="batch has 2 rows"), mask_rows(tiny, masks) as handle:
        handle.rows = [0]
        tiny(tokens, attention_mask=mask)
    assert not any(hp._forward_hooks for hp in tiny.hook_dict.values())


def _task(name, words):
    exs = [
        Example(id=str(i), task=name, prompt=f"say {w}", question=f"say {w}", answer=w)
        for i, w in enumerate(words)
    ]
    return Task(name, exs)


@pytest.mark.parametrize("method", ["mean", "resample"])
def test_packed_sweep_equals_plain_sweep(tiny, tmp_path, method):
    tasks = {
        "toy": _task("toy", ["a", "bb", "c d", "eee e", "f"]),
        "two": _task("two", ["xy", "z", "hello w"]),
    }
    ranks = {"toy": all_heads(3, 4)[::-1], "two": all_heads(3, 4)}
    cfg = SweepConfig(
        ks=[2, 5],
        seeds=2,
        ablation=method,
        max_new_tokens=4,
        selections=["topk", "randomk", "layermatched"],
    )
    metrics = [Accuracy(), ChrF()]
    with pytest.warns(SweepWarning):
        plain = run_sweep(
            tiny,
            tasks,
            ranks,
            cfg,
            metrics,
            batch_size=2,
            out_dir=tmp_path / "plain",
            progress=False,
        )
        packed = run_sweep(
            tiny,
            tasks,
            ranks,
            cfg,
            metrics,
            batch_size=2,
            out_dir=tmp_path / "packed",
            progress=False,
            pack_rows=6,
        )
    assert plain.records.equals(packed.records) and plain.generations.equals(packed.generations)
    files = sorted(p.name for p in (tmp_path / "plain" / "conditions").iterdir())
    assert (
        files == sorted(p.name for p in (tmp_path / "packed" / "conditions").iterdir())
        and len(files) == 2 * 11 + 1
    )
    for name in files:
        a, b = (
            json.loads((tmp_path / d / "conditions" / name).read_text())
            for d in ("plain", "packed")
        )
        for entry in (a, b):  # timings, and the checksum over them, differ
            entry.pop("seconds", None), entry.pop("_sha256", None)
        assert a == b, name
    # each run scored each distinct (question, answer, reference) once per metric
    for res in (plain, packed):
        stats = res.metric_cache
        assert stats["accuracy"]["lookups"] == 11 * 5 + 11 * 3
        assert (
            stats["accuracy"]["scored"]
            == res.generations.drop_duplicates(["task", "example_id", "generation"]).shape[0]
        )
        assert 0 < stats["all"]["hit_rate"] < 1


def test_packed_run_resumes_a_plain_run(tiny, tmp_path):
    tasks = {"toy": _task("toy", ["a", "bb", "c d", "eee e"])}
    ranks = {"toy": all_heads(3, 4)[::-1]}
    cfg = SweepConfig(ks=[2, 4], seeds=2, ablation="mean", max_new_tokens=4)
    with pytest.warns(SweepWarning):
        full = run_sweep(tiny, tasks, ranks, cfg, [Accuracy()], out_dir=tmp_path, progress=False)
        lost = sorted((tmp_path / "conditions").glob("toy__*.json"))[::2]
        for f in lost:
            f.unlink()
        resumed = run_sweep(
            tiny, tasks, ranks, cfg, [Accuracy()], out_dir=tmp_path, progress=False, pack_rows=3
        )
    assert full.generations.equals(resumed.generations) and full.records.equals(resumed.records)
    assert (
        resumed.metric_cache["accuracy"]["lookups"] == len(lost) * 4
    )  # only the lost conditions ran


def test_pack_rows_resolution_and_auto_size(tiny, monkeypatch):
    from interp_heads.execution.packed import auto_pack_rows, resolve_pack_rows

    assert resolve_pack_rows(None, tiny, 32, PROMPTS, 4) is None  # CPU: plain path by default
    assert resolve_pack_rows("auto", tiny, 32, PROMPTS, 4) == 32
    assert resolve_pack_rows(0, tiny, 32, PROMPTS, 4) is None
    assert resolve_pack_rows(7, tiny, 32, PROMPTS, 4) == 7
    with pytest.raises(ValueError, match="at least 1"):
        resolve_pack_rows(-1, tiny, 32, PROMPTS, 4)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (2**34, 2**35))
    rows = auto_pack_rows(tiny, 40, 6)
    assert rows == 4096  # a tiny model fits the cap in 16 GiB
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (2**20, 2**31))
    rows = auto_pack_rows(tiny, 40, 6)
    assert 1 <= rows < 4096 and (rows % 8 == 0 or rows < 8)
