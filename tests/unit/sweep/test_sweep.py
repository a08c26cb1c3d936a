"""The sweep grid on the tiny model: baseline, conditions, resume, refusal, figure."""

from __future__ import annotations

import json

import pytest

from interp_heads.figures.curves import plot_sweep
from interp_heads.heads import all_heads
from interp_heads.metrics import Accuracy, ChrF
from interp_heads.sweep.loop import SweepConfig, SweepWarning, run_sweep
from interp_heads.tasks.schema import Example, Task


def _task(name="toy", n=6):
    exs = [
        Example(id=str(i), task=name, prompt=f"say {w}", question=f"say {w}", answer=w)
        for i, w in enumerate("abcdefghij"[:n])
    ]
    return Task(name, exs)


@pytest.fixture
def setup(tiny):
    ranking = all_heads(3, 4)[::-1]
    cfg = SweepConfig(
        ks=[2, 4],
        seeds=2,
        ablation="mean",
        max_new_tokens=4,
        selections=["topk", "randomk", "layermatched"],
    )
    return tiny, {"toy": _task()}, {"toy": ranking}, cfg


def test_sweep_grid_and_tidy_records(setup):
    model, tasks, ranks, cfg = setup
    with pytest.warns(SweepWarning):  # a random model gets nothing right: low-baseline warning
        res = run_sweep(model, tasks, ranks, cfg, metrics=[Accuracy(), ChrF()], progress=False)
    rec = res.records
    assert set(rec.columns) >= {
        "task",
        "selection",
        "seed",
        "k",
        "metric",
        "label",
        "example_id",
        "value",
    }
    conds = rec.groupby(["selection", "k"]).seed.nunique().to_dict()
    assert conds == {
        ("baseline", 0): 1,
        ("TopK", 2): 1,
        ("TopK", 4): 1,
        ("RandomK", 2): 2,
        ("RandomK", 4): 2,
        ("LayerMatchedRandomK", 2): 2,
        ("LayerMatchedRandomK", 4): 2,
    }
    assert len(rec) == 11 * 6 * 2
    heads = res.generations.query("selection == 'TopK' and k == 2").heads.iloc[0]
    assert heads == "L2H3,L2H2"
    summary = res.summary(n_boot=200)
    assert {"mean", "ci_low", "ci_high", "baseline", "drop"} <= set(summary.columns)
    fig = plot_sweep(summary)
    names = {t.name for t in fig.data if t.showlegend}
    assert "TopK Accuracy" in names and "RandomK chrF (offline stand-in, not COMET)" in names
    dashes = {t.name: t.line.dash for t in fig.data if t.mode == "lines+markers"}
    assert dashes["TopK Accuracy"] == "solid" and dashes["RandomK Accuracy"] == "dash"


def test_resume_after_interruption_equals_uninterrupted(setup, tmp_path):
    model, tasks, ranks, cfg = setup
    full = run_sweep(
        model, tasks, ranks, cfg, metrics=[Accuracy()], out_dir=tmp_path / "a", progress=False
    )
    files = sorted((tmp_path / "a" / "conditions").glob("toy__*.json"))
    assert len(files) == 11
    for f in files[::2]:  # lose half of the finished conditions, as a kill would
        f.unlink()
    (tmp_path / "a" / "conditions" / "toy__TopK__k4__s0.json.tmp123").write_text("{partial")
    resumed = run_sweep(
        model, tasks, ranks, cfg, metrics=[Accuracy()], out_dir=tmp_path / "a", progress=False
    )
    key = ["selection", "k", "seed", "example_id"]
    assert (
        full.records.sort_values(key).value.tolist()
        == resumed.records.sort_values(key).value.tolist()
    )
    assert (
        full.generations.sort_values(key).generation.tolist()
        == resumed.generations.sort_values(key).generation.tolist()
    )


def test_reused_folder_with_other_config_is_refused(setup, tmp_path):
    model, tasks, ranks, cfg = setup
    run_sweep(model, tasks, ranks, cfg, metrics=[Accuracy()], out_dir=tmp_path, progress=False)
    before = (tmp_path / "conditions" / "config.json").read_text()
    other = SweepConfig(ks=[3], seeds=1, max_new_tokens=4)
    with pytest.raises(FileExistsError, match="different config"):
        run_sweep(
            model, tasks, ranks, other, metrics=[Accuracy()], out_dir=tmp_path, progress=False
        )
    assert (tmp_path / "conditions" / "config.json").read_text() == before
    assert json.loads(before)["config"]["ks"] == [2, 4]


def test_bad_k_is_refused(setup):
    model, tasks, ranks, _ = setup
    for k in (0, 13):
        with pytest.raises(ValueError, match="must be in 1..12"):
            run_sweep(
                model, tasks, ranks, SweepConfig(ks=[k]), metrics=[Accuracy()], progress=False
            )


@pytest.mark.parametrize("positions", ["all", "last", "generated"])
def test_mask_effect_check_warns_only_when_the_hooks_do_nothing(tiny, positions, monkeypatch):
    import contextlib
    import warnings

    from interp_heads.sweep import checks

    prompts = ["the cat sat on the mat", "a b", "one two three four"]
    plan = [("TopK", 3, 0, [(0, 0), (1, 1), (2, 2)])]
    with warnings.catch_warnings():
        warnings.simplefilter("error", SweepWarning)
        checks.check_mask_effect(tiny, "t", prompts, plan, "zero", None, positions)
    monkeypatch.setattr(checks, "mask_heads", lambda *a, **k: contextlib.nullcontext())
    with pytest.warns(SweepWarning, match="masking 3 heads changed no logits"):
        checks.check_mask_effect(tiny, "t", prompts, plan, "zero", None, positions)
