"""``damage_matched``: the largest k of the grid at which RandomK keeps 80% of the unmasked score,
checked against a hand computation from a tiny model's sweep records."""

from __future__ import annotations

import json
import warnings

import pandas as pd

from interp_heads.generation.decode import generate
from interp_heads.heads import all_heads
from interp_heads.metrics import ChrF
from interp_heads.sweep.damage import KEEP, damage_matched, damage_matched_k
from interp_heads.sweep.loop import SweepConfig, run_sweep
from interp_heads.tasks.schema import Example, Task


def _records(rows):
    cols = ["task", "selection", "k", "seed", "metric", "example_id", "value"]
    return pd.DataFrame(rows, columns=cols)


def test_largest_k_whose_random_mean_keeps_eighty_percent():
    rows = [("t", "baseline", 0, 0, "m", e, 1.0) for e in "ab"]
    for k, vals in ((2, (1.0, 0.9)), (4, (0.9, 0.7)), (8, (0.5, 0.3)), (16, (1.0, 0.9))):
        rows += [("t", "RandomK", k, s, "m", "a", v) for s, v in enumerate(vals)]
    rows += [("t", "TopK", 16, 0, "m", "a", 0.0)]
    # means: k=2 0.95, k=4 0.8 (kept: >= 0.8), k=8 0.4, k=16 0.95 -> the largest kept k is 16
    assert damage_matched_k(_records(rows), "t", "m") == 16
    assert damage_matched_k(_records(rows[:-3]), "t", "m") == 4  # without k = 16
    assert damage_matched_k(_records([r for r in rows if r[2] in (0, 8)]), "t", "m") is None
    zero = [(*r[:6], 0.0) for r in rows]
    assert damage_matched_k(_records(zero), "t", "m") is None  # no unmasked score to keep


def test_damage_k_of_a_tiny_sweep_equals_the_hand_computation(tiny):
    prompts = [f"say {w}" for w in "abcdef"]
    answers = generate(tiny, prompts, 4, stop_at_newline=True)  # unmasked: chrF = 100
    exs = [
        Example(str(i), "toy", p, a or "x")
        for i, (p, a) in enumerate(zip(prompts, answers, strict=True))
    ]
    cfg = SweepConfig(ks=[1, 2, 4, 8], seeds=2, ablation="scale", options={"scale_factor": 0.9},
                      max_new_tokens=4, selections=["topk", "randomk"])  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = run_sweep(tiny, {"toy": Task("toy", exs)}, {"toy": all_heads(3, 4)}, cfg,
                        metrics=[ChrF()], progress=False)  # fmt: skip
    r = res.records
    base = r[r.selection == "baseline"].value.mean()
    hand = None
    for k in cfg.ks:
        vals = r[(r.selection == "RandomK") & (r.k == k)].value
        assert len(vals) == 2 * len(exs)
        if vals.sum() / len(vals) >= KEEP * base:
            hand = k
    assert base > 0 and hand not in (None, cfg.ks[-1])  # damage within the grid on this model
    assert damage_matched(r, "chrf") == {"toy": hand}


def test_config_damage_matched_needs_randomk_and_keeps_the_digest_when_off():
    import pytest

    from interp_heads.config.run_config import RunConfig
    from interp_heads.errors import PipelineError

    assert RunConfig(damage_matched=False).digest() == RunConfig().digest()
    assert RunConfig(damage_matched=True).digest() != RunConfig().digest()
    with pytest.raises(PipelineError, match="damage_matched needs the randomk selection"):
        RunConfig(damage_matched=True, selections=["topk"])


def test_a_run_records_each_tasks_damage_k_and_shows_it(tmp_path):
    from interp_heads.pipeline.experiment import RunConfig, run_pipeline

    cfg = RunConfig.from_dict(
        {
            "model": "tiny", "tasks": ["tests/data/tiny_echo.jsonl"], "attribution": "gradxact",
            "n_rank": 4, "n_eval": 4, "filter_correct": False, "ks": [1, 2, 4],
            "selections": ["topk", "randomk"], "seeds": 2, "metrics": ["chrf"],
            "max_new_tokens": 2, "verify": 0, "known_heads": False, "damage_matched": True,
        }
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        index = run_pipeline(cfg, tmp_path / "run", quiet=True)
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    records = pd.read_parquet(tmp_path / "run" / "sweep.parquet")
    (task,) = manifest["damage_k"]
    assert manifest["damage_k"][task] == damage_matched_k(records, task, "chrf")
    assert manifest["damage_metric"] == "chrf"
    assert "random heads still keep 80% of the score" in index.read_text()
