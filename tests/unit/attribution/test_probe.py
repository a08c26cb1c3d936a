"""Probe attribution: a planted label head ranks first, features match plain TransformerLens caches,
the importance matches its hand computation, and the pipeline trains, stores and reuses the probe."""

from __future__ import annotations

import json
import warnings

import pytest
import torch

from interp_heads.attribution import attribute_heads
from interp_heads.attribution.probe import (
    PROBE_POSITIONS,
    HeadProbe,
    ProbeData,
    ProbeSettings,
    head_features,
    importance,
    probe_heads,
    split,
)
from interp_heads.errors import InputError, PipelineError
from interp_heads.heads import head_label, hook_z
from interp_heads.models.tl_compat import HAS_HOOKED
from interp_heads.tasks.schema import Example, Task
from interp_heads.testing.planted import LABEL_HEAD, label_planted_model, label_planted_tasks
from interp_heads.testing.tiny import MIXED_PROMPTS


@pytest.fixture(scope="module")
def planted():
    if not HAS_HOOKED:  # TransformerLens 4 (tl4 env) has no HookedTransformer to plant weights in
        pytest.skip("a planted HookedTransformer (no TL 4 twin)")
    return label_planted_model(), label_planted_tasks()


@pytest.mark.parametrize("position", PROBE_POSITIONS)
@pytest.mark.parametrize("kind", ["mlp", "linear"])
def test_planted_label_head_ranks_first(planted, position, kind):
    model, tasks = planted
    out = probe_heads(model, tasks, "plain", position=position, settings=ProbeSettings(kind=kind))
    for name, scores in out.items():
        assert scores.method == "probe" and scores.task == name
        assert scores.top_labels(1) == [head_label(*LABEL_HEAD)], (name, scores.top_labels(3))
        p = scores.provenance["probe"]
        assert p["heldout_accuracy"] > p["chance"] == 0.5


def test_planted_head_first_with_layer_mean_off_too(planted):
    model, tasks = planted
    out = probe_heads(model, tasks, "plain", position="last", layer_mean=False)
    assert all(s.top_labels(1) == [head_label(*LABEL_HEAD)] for s in out.values())


def test_only_the_planted_head_sees_the_label(planted):
    """The construction itself: every other head's z is identical for matching A and B prompts."""
    model, tasks = planted
    d = head_features(model, tasks, "plain", position="last", layer_mean=False)
    n = len(tasks[0])
    diff = (d.features[:n] - d.features[n:]).abs().amax(-1).amax(0)
    idx = LABEL_HEAD[0] * model.cfg.n_heads + LABEL_HEAD[1]
    assert diff[idx] > 0.1 and diff[torch.arange(len(diff)) != idx].max() == 0


def _plain_z(model, tokens):
    _, cache = model.run_with_cache(tokens, names_filter=lambda n: n.endswith("hook_z"))
    return torch.stack([cache[hook_z(layer)][0] for layer in range(model.cfg.n_layers)], 1)


def test_features_match_an_unpadded_transformer_lens_cache(tiny):
    """Left-padded batches give each prompt's own z: last position, answer tokens, prompt mean."""
    examples = [Example(f"e{i}", "t", p, "yes") for i, p in enumerate(MIXED_PROMPTS)]
    tasks = [Task("t", examples[:4]), Task("u", examples[4:])]
    feats = {
        pos: head_features(tiny, tasks, "plain", position=pos, layer_mean=False, batch_size=3)
        for pos in PROBE_POSITIONS
    }
    for i, ex in enumerate(examples):
        prompt = tiny.to_tokens(ex.prompt, prepend_bos=False)[0]
        answer = tiny.to_tokens(" yes", prepend_bos=False)[0]
        z = _plain_z(tiny, prompt[None])  # [pos, layer, head, d_head]
        za = _plain_z(tiny, torch.cat([prompt, answer])[None])[len(prompt) :]
        want = {"last": z[-1], "mean": z.mean(0), "answer": za.mean(0)}
        for pos, ref in want.items():
            got = feats[pos].features[i].reshape(ref.shape)
            torch.testing.assert_close(got, ref, atol=2e-5, rtol=1e-4, msg=f"{pos} {ex.id}")
    assert feats["last"].labels.tolist() == [0] * 4 + [1] * 4


def test_layer_mean_is_concatenated(tiny):
    tasks = [
        Task(n, [Example(f"{n}{i}", n, p, "a") for i, p in enumerate(MIXED_PROMPTS[:3])])
        for n in "tu"
    ]
    plain = head_features(tiny, tasks, "plain", position="last", layer_mean=False).features
    both = head_features(tiny, tasks, "plain", position="last").features
    d, h = tiny.cfg.d_head, tiny.cfg.n_heads
    torch.testing.assert_close(both[..., :d], plain)
    per_layer = plain.reshape(len(plain), -1, h, d).mean(2, keepdim=True).expand(-1, -1, h, -1)
    torch.testing.assert_close(both[..., d:], per_layer.reshape(len(plain), -1, d))


def test_importance_of_a_linear_probe_by_hand():
    """Linear probe: d logit_c / d proj_f = W_c[f]; the score is mean_examples |mean_d W_c[f] proj_f|."""
    torch.manual_seed(1)
    x, y = torch.randn(6, 5, 3), torch.tensor([0, 1, 2, 0, 1, 2])
    data = ProbeData(x, y, [str(i) for i in range(6)], ["a", "b", "c"])
    probe = HeadProbe(3, 5, 3, ProbeSettings(kind="linear", proj_dim=4)).eval()
    got = importance(probe, data, torch.arange(6))
    w = probe.classifier.weight.detach().reshape(3, 5, 4)
    proj = probe.feature_proj(x).detach()  # [example, feature, proj]
    for c in range(3):
        rows = proj[y == c]
        want = (w[c][None] * rows).mean(-1).abs().mean(0)
        torch.testing.assert_close(got[c], want)


def test_split_is_stratified_and_seeded():
    labels = torch.tensor([0] * 8 + [1] * 4)
    train, test = split(labels, 0.25, seed=3)
    assert sorted(train.tolist() + test.tolist()) == list(range(12))
    assert torch.bincount(labels[test]).tolist() == [2, 1]
    assert torch.equal(split(labels, 0.25, seed=3)[1], test)
    assert not torch.equal(split(labels, 0.25, seed=4)[1], test)


def test_training_leaves_the_global_rng_alone(planted):
    model, tasks = planted
    torch.manual_seed(5)
    want = torch.rand(3)
    torch.manual_seed(5)
    a = probe_heads(model, tasks, "plain", position="last")
    assert torch.equal(torch.rand(3), want)
    b = probe_heads(model, tasks, "plain", position="last")
    torch.testing.assert_close(a["task_a"].scores, b["task_a"].scores)  # seeded: the same probe


def test_bad_inputs_are_refused(planted, tiny):
    model, tasks = planted
    with pytest.raises(InputError, match="two or more distinct tasks"):
        probe_heads(model, tasks[:1], "plain")
    with pytest.raises(InputError, match="probe position"):
        probe_heads(model, tasks, "plain", position="first")
    with pytest.raises(InputError, match="probe kind"):
        ProbeSettings(kind="svm")
    with pytest.raises(InputError, match="several tasks"):
        attribute_heads(model, tasks[0], "probe")
    from interp_heads.config.run_config import RunConfig

    with pytest.raises(PipelineError, match="two or more"):
        RunConfig(model="tiny", tasks=["math"], attribution="probe")


def test_new_settings_keep_todays_digest():
    from interp_heads.config.run_config import RunConfig

    probe = {"model": "tiny", "attribution": "probe", "tasks": ["retrieval", "inference"]}
    base = RunConfig(**probe)
    assert RunConfig(**probe, probe_kind="mlp", probe_epochs=40).digest() == base.digest()
    assert RunConfig(**probe, probe_position="last").digest() != base.digest()
    with pytest.raises(ValueError, match="probe_position needs attribution 'probe'"):
        RunConfig(model="tiny", probe_position="last")  # another method's option: refused


@pytest.mark.skipif(not HAS_HOOKED, reason="a planted HookedTransformer (no TL 4 twin)")
def test_pipeline_trains_once_stores_and_reuses(tmp_path, monkeypatch):
    from interp_heads.attribution import probe as probe_mod
    from interp_heads.pipeline.experiment import RunConfig, run_pipeline
    from interp_heads.tasks.io import save_task

    paths = [str(save_task(t, tmp_path / f"{t.name}.jsonl")) for t in label_planted_tasks(12)]
    cfg = RunConfig.from_dict(
        {
            "model": "tiny", "tasks": paths, "attribution": "probe", "probe_position": "last",
            "n_rank": 8, "n_eval": 4, "ks": [2], "selections": ["topk", "randomk"], "seeds": 1,
            "metrics": ["accuracy"], "max_new_tokens": 2, "filter_correct": False, "verify": 2,
        }
    )  # fmt: skip
    calls = []
    real = probe_mod.probe_heads
    monkeypatch.setattr(probe_mod, "probe_heads", lambda *a, **k: calls.append(1) or real(*a, **k))
    out = tmp_path / "run"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        index = run_pipeline(cfg, out, quiet=True)
        manifest = json.loads((out / "manifest.json").read_text())
        assert calls == [1] and manifest["probe"]["n_heldout"] == 4
        assert set(manifest["verification"]) == {"task_a", "task_b"}
        assert "How well does the probe tell the tasks apart?" in index.read_text()
        run_pipeline(cfg, out, quiet=True)
    assert calls == [1]  # the second run reused both stored rankings
    ranking = (out / "ranking.csv").read_text()
    assert "task_a" in ranking and "task_b" in ranking


def test_study_importance_is_the_magnitude_of_the_mean():
    """``abs_mean`` (the study's) is |mean_rows mean_d W_c[f] proj_f|; rows of opposite sign cancel
    there and not in ``mean_abs``."""
    torch.manual_seed(2)
    half = torch.randn(3, 5, 3)
    x, y = torch.cat([half, -half, torch.randn(2, 5, 3)]), torch.tensor([0] * 6 + [1] * 2)
    data = ProbeData(x, y, [str(i) for i in range(8)], ["a", "b"])
    probe = HeadProbe(3, 5, 2, ProbeSettings(kind="linear", proj_dim=4)).eval()
    with torch.no_grad():
        probe.feature_proj.bias.zero_()  # proj(-x) = -proj(x): label a's rows cancel exactly
    w = probe.classifier.weight.detach().reshape(2, 5, 4)
    proj = probe.feature_proj(x).detach()
    gxa = [(w[c][None] * proj[y == c]).mean(-1) for c in range(2)]  # [row, feature]
    study = importance(probe, data, torch.arange(8), "abs_mean")
    for c in range(2):
        torch.testing.assert_close(study[c], gxa[c].mean(0).abs())
    torch.testing.assert_close(study[0], torch.zeros(5), atol=1e-6, rtol=0)
    assert (importance(probe, data, torch.arange(8), "mean_abs")[0] > 1e-3).all()
    with pytest.raises(InputError, match="probe importance"):
        ProbeSettings(importance="max")


def _flushes(n: int = 1 << 20) -> bool:
    """Every element of a denormal tensor read as 0 by a product split over torch's workers."""
    return bool((torch.full((n,), 1e-39).mul(1.0) == 0).all())


def test_training_thread_flushes_denormals_in_its_workers_and_only_there():
    from interp_heads.attribution.probe import flushed_thread

    threads = torch.get_num_threads()
    torch.set_num_threads(2)  # the workers split the product (at one thread this proves less)
    try:
        assert not _flushes()  # the caller's workers start here, without the flush
        assert flushed_thread(_flushes)
        assert not _flushes()  # the caller and its workers are as they were
        with pytest.raises(ValueError, match="inside"):
            flushed_thread(lambda: (_ for _ in ()).throw(ValueError("inside")))
    finally:
        torch.set_num_threads(threads)


def test_training_in_its_thread_equals_the_plain_loop():
    """train_probe against the same AdamW loop written out in the calling thread (features far
    from the denormal range: the flush changes nothing there)."""
    from torch import nn

    from interp_heads.attribution.probe import train_probe

    gen = torch.Generator().manual_seed(1)
    data = ProbeData(
        features=torch.randn(12, 6, 8, generator=gen),
        labels=torch.arange(12) % 3,
        ids=[str(i) for i in range(12)],
        tasks=["a", "b", "c"],
    )
    s = ProbeSettings(epochs=3, batch_size=2, hidden=16, proj_dim=4, seed=5)
    train = torch.arange(10)
    got = train_probe(data, train, s)
    x, y = data.features[train], data.labels[train]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(s.seed)
        ref = HeadProbe(8, 6, 3, s)
        opt = torch.optim.AdamW(ref.parameters(), lr=s.lr, fused=True)
        ref.train()
        for _ in range(s.epochs):
            for b in torch.randperm(len(x)).split(s.batch_size):
                opt.zero_grad()
                nn.CrossEntropyLoss()(ref(x[b]), y[b]).backward()
                opt.step()
    for a, b in zip(got.parameters(), ref.parameters(), strict=True):
        assert torch.equal(a, b)
