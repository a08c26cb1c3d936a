"""``verify``: a ranking's top heads and a random sample, checked by their exact mean-ablation drop.

The exact drops are checked against plain forward hooks (``ablation.head_means`` and
``run_with_hooks``), independent of ``patch_heads``; the verdicts against rankings whose agreement
is known by construction (the exact drops themselves, and their negation).
"""

from __future__ import annotations

import json
import math
import warnings

import pytest
import torch

from interp_heads.attribution import HeadScores, attribute_heads, make_batches
from interp_heads.attribution.inputs import answer_logprob
from interp_heads.attribution.stability import spearman
from interp_heads.attribution.verify import (
    VerificationWarning,
    known_exact,
    pick_heads,
    verify_ranking,
)
from interp_heads.config.run_config import RunConfig
from interp_heads.heads import hook_z
from interp_heads.interventions.means import head_means
from interp_heads.store.folder import RunFolder
from interp_heads.tasks.prompts import render
from interp_heads.tasks.schema import Example, Task

PROMPTS = [
    "The capital of France is ",
    "Bob gave the cat to the ",
    "Sun rises in the east and ",
    "One two three four ",
]
TASK = Task(
    "plain",
    [Example(str(i), "plain", p, a) for i, (p, a) in enumerate(zip(PROMPTS, "PASf", strict=True))],
)


def _drop(model, batches, means, layer, head):
    """Mean answer log-prob drop when z[layer, head] <- its task mean at every position."""

    def hook(z, hook):
        z = z.clone()
        z[:, :, head] = means[layer][head]
        return z

    total, n = 0.0, 0
    for b in batches:
        with torch.no_grad():
            clean = model(b.clean, attention_mask=b.mask)[:, -1]
            abl = model.run_with_hooks(
                b.clean, attention_mask=b.mask, fwd_hooks=[(hook_z(layer), hook)]
            )[:, -1]
        total += float((answer_logprob(clean, b) - answer_logprob(abl, b)).sum())
        n += len(b)
    return total / n


def _batches(tiny):
    return make_batches(tiny, TASK, batch_size=2, corrupted=False, fmt="plain")


def test_exact_drops_match_plain_hooks(tiny):
    batches = _batches(tiny)
    s = attribute_heads(tiny, TASK, "gradxact", fmt="plain")
    v = verify_ranking(tiny, batches, s, 3)
    means = head_means(tiny, render(tiny, PROMPTS, fmt="plain"))
    assert len(v["top"]) == 3 and len(v["sample"]) == 3 and v["measured"] == 6
    assert [r["head"] for r in v["top"]] == s.top_labels(3)
    for row in v["top"] + v["sample"]:
        layer, head = (int(x) for x in row["head"][1:].split("H"))
        assert abs(row["exact"] - _drop(tiny, batches, means, layer, head)) < 1e-4
    json.dumps(v)  # JSON-ready


def test_verdicts_of_known_rankings(tiny):
    batches = _batches(tiny)
    n = tiny.cfg.n_layers * tiny.cfg.n_heads
    exact = verify_ranking(
        tiny, batches, HeadScores(torch.zeros(3, 4), "x", "t"), n // 2, seed=1
    )  # all heads measured (top 6 + the other 6)
    drops = torch.zeros(3, 4)
    for row in exact["top"] + exact["sample"]:
        layer, head = (int(x) for x in row["head"][1:].split("H"))
        drops[layer, head] = row["exact"]
    good = verify_ranking(
        tiny, batches, HeadScores(drops, "x", "t", provenance={"rank_by": "signed"}), 5
    )
    assert good["top_confirmed"] == 5 and good["spearman"] == pytest.approx(1.0)
    assert not good["flag"] and good["verdict"].startswith("top set confirmed: 5 of the top 5")
    assert "order confirmed: Spearman 1.00 over all 10 verified heads" in good["verdict"]
    bad = verify_ranking(
        tiny, batches, HeadScores(-drops, "x", "t", provenance={"rank_by": "signed"}), 5
    )
    assert bad["flag"] and bad["spearman"] < 0
    assert "top set NOT confirmed" in bad["verdict"] and "order NOT confirmed" in bad["verdict"]
    few = verify_ranking(
        tiny, batches, HeadScores(-drops, "x", "t", provenance={"rank_by": "signed"}), 3
    )  # 3 + 3 heads cannot decide: nothing is flagged
    assert not few["flag"] and few["verdict"].startswith("too few heads to decide")


def test_reuses_exact_scores_of_refine_and_exact_layers(tiny):
    s = attribute_heads(tiny, TASK, "ablation_atp", fmt="plain", refine=3, verify=3)
    v = s.provenance["verification"]
    known = known_exact(s)
    assert int((~known.isnan()).sum()) == 3 + 4 - int(s.refined[0].sum())  # refined + layer 0
    top, sample = pick_heads(s, 3)
    assert v["measured"] == sum(bool(known[h].isnan()) for h in top + sample)
    for row, h in zip(v["top"], top, strict=True):
        assert row["exact"] == pytest.approx(float(s.scores[h]), abs=1e-5)  # refine's own value
    assert s.provenance["seconds"] >= v["seconds"]
    assert known_exact(attribute_heads(tiny, TASK, "gradxact", fmt="plain")).isnan().all()


def test_sample_is_seeded_and_outside_the_top(tiny):
    s = attribute_heads(tiny, TASK, "gradxact", fmt="plain")
    top, sample = pick_heads(s, 4, seed=3)
    assert not set(top) & set(sample) and len(sample) == 4
    assert pick_heads(s, 4, seed=3) == (top, sample) and pick_heads(s, 4, seed=4)[1] != sample
    assert len(pick_heads(s, 10)[1]) == 2  # only 2 heads left outside the top 10
    assert math.isnan(spearman([1.0, 2.0], [2.0, 1.0]))  # too few pairs
    assert spearman([1.0, 2.0, 3.0, 4.0], [10.0, 20.0, 30.0, 25.0]) == pytest.approx(0.8)


def test_verify_is_not_in_the_digest():
    assert RunConfig(verify=0).digest() == RunConfig().digest() == RunConfig(verify=3).digest()
    assert RunConfig().verify == 8


def test_pipeline_records_and_warns(tiny, tmp_path, monkeypatch):
    from interp_heads.cli import main

    task = tmp_path / "t.jsonl"
    task.write_text(
        "".join(
            json.dumps({"id": f"t{i}", "prompt": p, "answer": a}) + "\n"
            for i, (p, a) in enumerate(zip(PROMPTS, "PASf", strict=True))
        )
    )
    out = tmp_path / "a"
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        argv = [
            "attribute",
            "--model",
            "tiny",
            "--task",
            str(task),
            "--no-filter",
            "--out",
            str(out),
        ]
        assert main([*argv, "--verify", "2", "--quiet"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    check = manifest["verification"]["t"]
    assert check["m"] == 2 and check["verdict"]
    flagged = [w for w in seen if issubclass(w.category, VerificationWarning)]
    assert bool(flagged) == bool(check["flag"])
    page = (out / "index.html").read_text()
    assert "How far can each ranking be trusted?" in page and check["verdict"] in page
    stored = HeadScores.load(RunFolder(out).attribution_entry("t"))  # the ranking's provenance
    assert stored.provenance["verification"]["verdict"] == check["verdict"]


def test_resumed_folder_is_verified_without_reranking(tiny, tmp_path):
    """A folder ranked with verify = 0 keeps its ranking; a rerun with verify adds the check."""
    from interp_heads.cli import main

    argv = ["attribute", "--model", "tiny", "--task", "tests/data/tiny_echo.jsonl", "--no-filter"]
    out = tmp_path / "r"
    assert main([*argv, "--out", str(out), "--verify", "0", "--quiet"]) == 0
    entry = RunFolder(out).attribution_entry("tiny_echo")
    before = HeadScores.load(entry)
    assert "verification" not in before.provenance
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["verification"]["tiny_echo"] == {"skipped": "off (verify = 0)"}
    assert main([*argv, "--out", str(out), "--verify", "2", "--quiet"]) == 0
    after = HeadScores.load(entry)
    assert after.provenance["resume_key"] == before.provenance["resume_key"]
    assert after.provenance["date"] == before.provenance["date"]  # not re-ranked
    assert torch.equal(after.scores, before.scores) and after.provenance["verification"]["m"] == 2
