"""Split-half stability of every ranking: halves from per-example scores, agreement, flags, pipeline."""

from __future__ import annotations

import json
import warnings
from types import SimpleNamespace

import pytest
import torch
from scipy.stats import spearmanr

from interp_heads.attribution import HeadScores, attribute_heads
from interp_heads.attribution.stability import halves_of, split_record, stability_of
from interp_heads.cli import main
from interp_heads.pipeline.ranking_stability import StabilityWarning, record_stability
from interp_heads.run import Manifest
from interp_heads.tasks.schema import Example, Task

WORDS = ["cat", "dog", "sun", "map", "pen", "cup", "hat"]
TASK = Task(
    "t",
    [
        Example(
            f"e{i}", "t", f"The {w} is on the ", "m", corrupted_prompt=f"The {w} is in the ",
            corrupted_answer="b",
        )
        for i, w in enumerate(WORDS)
    ],
)  # fmt: skip


@pytest.mark.parametrize(
    "method,kw",
    [
        ("atp", {}),
        ("exact", {}),
        ("gradxact", {}),
        ("headmask", {}),
        ("ablation_atp", {}),  # layer 0 by exact mean ablation (exact_layers = 1)
        ("ablation_atp", {"ablation": "resample", "exact_layers": 0}),
        ("ablation_atp", {"refine": 5}),
        ("atp", {"refine": 5}),
        ("mean_ablation", {}),
        ("ablation_ig", {"steps": 2}),
    ],
)
def test_halves_average_to_the_ranking(tiny, method, kw):
    """Each half is the mean of its examples' terms: the two, weighted by size, give the score."""
    scores = attribute_heads(tiny, TASK, method, **kw)
    rec = scores.provenance["split_half"]
    assert rec["n_examples"] == 7 and rec["n_half"] == [4, 3]
    a, b = (torch.tensor(h) for h in rec["scores"])
    torch.testing.assert_close((4 * a + 3 * b) / 7, scores.scores, atol=1e-5, rtol=1e-4)
    assert not torch.equal(a, b)


@pytest.mark.parametrize(
    "method,kw",
    [("gradxact", {}), ("headmask", {}), ("ablation_atp", {"ablation": "zero", "exact_layers": 0})],
)
def test_halves_equal_a_ranking_of_each_half(tiny, method, kw):
    """Methods without a task-level quantity: a half's scores are that half ranked on its own."""
    scores = attribute_heads(tiny, TASK, method, **kw)
    ids = [e.id for e in TASK]
    for part, half in zip((ids[0::2], ids[1::2]), halves_of(scores), strict=True):
        alone = attribute_heads(tiny, TASK.subset(ids=part), method, **kw)
        torch.testing.assert_close(half.scores, alone.scores, atol=1e-5, rtol=1e-4)


def _with_halves(a, b, rank_by="abs") -> HeadScores:
    per = torch.stack(
        [torch.as_tensor(a, dtype=torch.float), torch.as_tensor(b, dtype=torch.float)]
    )
    full = per.mean(0)
    return HeadScores(full, "m", "t", provenance={"rank_by": rank_by, "split_half": {
        "n_examples": 12, "n_half": [6, 6], "scores": [per[0].tolist(), per[1].tolist()]}})  # fmt: skip


def test_agreement_equals_hand_computation():
    gen = torch.Generator().manual_seed(3)
    a, b = torch.rand(4, 5, generator=gen), torch.rand(4, 5, generator=gen)
    got = stability_of(_with_halves(a, b, "signed"), [3, 6])
    rho = spearmanr(a.flatten().numpy(), b.flatten().numpy()).statistic
    assert got["spearman"] == pytest.approx(rho, abs=1e-4)
    for k in (3, 6):
        ta = set(a.flatten().argsort(descending=True)[:k].tolist())
        tb = set(b.flatten().argsort(descending=True)[:k].tolist())
        assert got["jaccard"][str(k)] == pytest.approx(len(ta & tb) / len(ta | tb), abs=1e-4)
        assert got["shared"][str(k)] == len(ta & tb)
    assert got["n_examples"] == 12 and got["n_half"] == [6, 6]


def test_disagreeing_halves_are_flagged_identical_are_not():
    up = torch.arange(20.0).view(4, 5)
    down = up.flip(0).flip(1)  # the opposite order: no head in both top 5
    bad = stability_of(_with_halves(up, down, "signed"), [5])
    assert bad["jaccard"]["5"] == 0.0 and bad["unstable"] == [5] and bad["spearman"] == -1.0
    good = stability_of(_with_halves(up, up, "signed"), [5])
    assert good["jaccard"]["5"] == 1.0 and good["unstable"] == [] and good["spearman"] == 1.0


def test_record_stability_writes_manifest_and_provenance_and_warns():
    record = SimpleNamespace(manifest=Manifest())  # the run's record (pipeline.record.RunRecord)
    bad = _with_halves(
        torch.arange(20.0).view(4, 5), torch.arange(20.0).flip(0).view(4, 5), "signed"
    )
    with pytest.warns(StabilityWarning, match="unstable at k = 5.*share 0 of 5"):
        assert record_stability(record, "t", bad, [5])
    assert record.manifest.stability["t"] == bad.provenance["stability"]
    good = _with_halves(torch.arange(20.0).view(4, 5), torch.arange(20.0).view(4, 5), "signed")
    with warnings.catch_warnings():
        warnings.simplefilter("error", StabilityWarning)
        record_stability(record, "t", good, [5])


def test_too_few_examples_are_skipped_with_a_reason():
    rec = split_record(torch.zeros(3, 2, 2))
    assert rec["n_examples"] == 3 and "needs >= 4" in rec["skipped"]
    scores = HeadScores(torch.zeros(2, 2), "m", "t", provenance={"split_half": rec})
    assert stability_of(scores, [1]) == {"n_examples": 3, "skipped": rec["skipped"]}


def test_run_records_stability_and_restores_it_for_old_rankings(tmp_path):
    """A run stores it per ranking and in the manifest; a ranking stored without halves (an older
    run folder) gets the same halves on the next run, without being re-ranked."""
    data = tmp_path / "t.jsonl"
    data.write_text("".join(json.dumps(e.to_dict()) + "\n" for e in TASK))
    cfg = tmp_path / "c.toml"
    cfg.write_text(
        f'model = "tiny"\ntasks = ["{data}"]\nn_rank = 6\nn_eval = 1\nattribution = "atp"\n'
        'ks = [2, 4]\nselections = ["topk"]\nseeds = 1\nmetrics = ["accuracy"]\n'
        "max_new_tokens = 2\nfilter_correct = false\n"
    )
    out = tmp_path / "run"
    assert main(["run", "--config", str(cfg), "--out", str(out), "--quiet"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    entry = out / "attribution" / "t.json"
    stored = HeadScores.load(entry)
    assert manifest["stability"]["t"] == stored.provenance["stability"]
    assert set(stored.provenance["stability"]["jaccard"]) == {"2", "4"}
    assert stored.provenance["stability"]["n_half"] == [3, 3]
    halves = stored.provenance.pop("split_half")
    stored.provenance.pop("stability")
    stored.save(entry)
    assert main(["run", "--config", str(cfg), "--out", str(out), "--quiet"]) == 0
    again = HeadScores.load(entry)
    assert again.provenance["split_half"] == halves
    assert again.provenance["date"] == stored.provenance["date"]  # the ranking itself was reused
    assert "Ranking stability" in (out / "index.html").read_text()
