"""Mask scope and the ``scale`` kind: ``positions="last"`` and ``scale`` against hand-written hooks.

The reference hooks below are written from the definition, not from ``interp_heads.interventions.masks``:
``positions="last"`` edits ``z[:, -1, h]`` of every forward pass (the last prompt token, then each
KV-cached step), ``scale`` multiplies ``z`` by the factor.
"""

from __future__ import annotations

import pytest

from interp_heads.execution.packed import PackedJob, generate_packed
from interp_heads.generation.decode import generate_tokens
from interp_heads.interventions.kinds import get_kind
from interp_heads.interventions.masks import mask_heads
from interp_heads.interventions.means import head_means
from interp_heads.interventions.selections import RandomK

PROMPTS = ["a", "say hello there", "xyz", "one two three four five six", "q?", "the cat"]
HEADS = [(0, 1), (1, 3), (2, 0), (2, 2)]


def _reference_hooks(model, heads, kind, means, last, factor=1e-4):
    """Plain ``hook_z`` hooks: replace (or scale) the heads at position -1 only, or everywhere."""
    by_layer: dict[int, list[int]] = {}
    for layer, h in heads:
        by_layer.setdefault(layer, []).append(h)

    def make(layer, hs):
        def hook(z, hook):
            z = z.clone()
            pos = [z.shape[1] - 1] if last else list(range(z.shape[1]))
            for p in pos:
                for h in hs:
                    if kind == "zero":
                        z[:, p, h] = 0.0
                    elif kind == "mean":
                        z[:, p, h] = means[layer][h]
                    else:  # scale
                        z[:, p, h] = z[:, p, h] * factor
            return z

        return hook

    return [(f"blocks.{layer}.attn.hook_z", make(layer, hs)) for layer, hs in by_layer.items()]


def _gen(model, use_cache, **kw):
    return generate_tokens(
        model, PROMPTS, 8, batch_size=4, use_cache=use_cache, stop_at_eos=False, **kw
    )


@pytest.mark.parametrize("kind", ["zero", "mean", "scale"])
@pytest.mark.parametrize("use_cache", [True, False])
def test_last_position_mask_equals_reference_hook(tiny, kind, use_cache):
    means = head_means(tiny, PROMPTS)
    values = means if kind == "mean" else None
    ref = _gen(tiny, use_cache, fwd_hooks=_reference_hooks(tiny, HEADS, kind, means, last=True))
    with mask_heads(tiny, HEADS, kind, values=values, positions="last"):
        got = _gen(tiny, use_cache)
    assert got == ref
    with mask_heads(tiny, HEADS, kind, values=values, positions="all"):
        everywhere = _gen(tiny, use_cache)
    assert everywhere == _gen(
        tiny, use_cache, fwd_hooks=_reference_hooks(tiny, HEADS, kind, means, last=False)
    )
    assert everywhere != got  # the scope changes the answers (the check could fail)
    assert got != _gen(tiny, use_cache)  # and the last-position mask has an effect


def test_last_position_mask_differs_with_and_without_cache(tiny):
    """Without the cache every step re-runs the prompt and masks only its last token."""
    with mask_heads(tiny, HEADS, "zero", positions="last"):
        assert _gen(tiny, True) != _gen(tiny, False)


@pytest.mark.parametrize("kind", ["zero", "mean", "resample", "scale"])
@pytest.mark.parametrize("positions", ["all", "last"])
@pytest.mark.parametrize("use_cache", [True, False])
def test_packed_equals_plain_for_every_kind_and_scope(tiny, kind, positions, use_cache):
    values = {
        "mean": head_means(tiny, PROMPTS),
        "resample": head_means(tiny, PROMPTS, per_prompt=True),
    }.get(kind)
    rk = RandomK(3, 4, salt="t")
    jobs = [
        PackedJob(PROMPTS, [], values),
        PackedJob(PROMPTS, HEADS, values),
        PackedJob(PROMPTS, rk.select(6, 0), values, seed=1),
    ]
    alone = []
    for job in jobs:
        with mask_heads(
            tiny,
            job.heads,
            kind,
            values=job.values,
            seed=job.seed,
            positions=positions,
            warn_if_idle=False,
            scale_factor=0.01,
        ):
            alone.append(_gen(tiny, use_cache))
    packed = generate_packed(
        tiny,
        jobs,
        get_kind(kind, scale_factor=0.01),
        8,
        pack_rows=5,
        positions=positions,
        use_cache=use_cache,
        stop_at_eos=False,
    )
    texts = [[tiny.tokenizer.decode(r, skip_special_tokens=True) for r in rows] for rows in alone]
    assert packed == texts
    assert len({tuple(map(tuple, rows)) for rows in alone}) == 3


def test_scale_factor_one_is_no_mask(tiny):
    plain = _gen(tiny, True)
    with mask_heads(tiny, HEADS, "scale", scale_factor=1.0):
        assert _gen(tiny, True) == plain
    with mask_heads(tiny, HEADS, "scale", scale_factor=0.0):  # scale 0 is the zero mask
        scaled = _gen(tiny, True)
    with mask_heads(tiny, HEADS, "zero"):
        assert scaled == _gen(tiny, True)


def _toy_task(name, words):
    from interp_heads.tasks.schema import Example, Task

    exs = [
        Example(id=str(i), task=name, prompt=f"say {w}", question=f"say {w}", answer=w)
        for i, w in enumerate(words)
    ]
    return Task(name, exs)


def _sweep(model, cfg, out, **kw):
    import warnings

    from interp_heads.metrics import ChrF
    from interp_heads.sweep.loop import run_sweep

    tasks = {"toy": _toy_task("toy", ["a", "bb", "c d", "eee e", "f"])}
    ranks = {"toy": [(2, 3), (1, 0), (0, 2), (2, 1), (1, 1)]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_sweep(
            model, tasks, ranks, cfg, [ChrF()], batch_size=2, out_dir=out, progress=False, **kw
        )


@pytest.mark.parametrize("positions", ["last", "generated"])
def test_sweep_with_a_scoped_scale_is_the_same_plain_packed_and_by_executor(
    tiny, tmp_path, positions
):
    import json

    from interp_heads.execution.local import PREFIX_COPIES, LocalExecutor, PlainExecutor
    from interp_heads.sweep.loop import SweepConfig

    cfg = SweepConfig(
        ks=[2, 5],
        seeds=1,
        ablation="scale",
        positions=positions,
        options={"scale_factor": 1e-3},
        max_new_tokens=5,
    )
    plain = _sweep(tiny, cfg, tmp_path / "plain", pack_rows=0)
    packed = _sweep(tiny, cfg, tmp_path / "packed", pack_rows=3)
    # three conditions a batch over each batch's one prompt prefix (batch_size 2)
    wide = _sweep(tiny, cfg, tmp_path / "wide", pack_rows=6)
    remote = _sweep(tiny, cfg, tmp_path / "exec", executor=PlainExecutor(tiny))
    # the default executor on the CPU: the conditions over the prefix packed PREFIX_COPIES a
    # batch, the prefix read in place (models.backends.shared_prefix), where TransformerLens'
    # HookedTransformer runs the fused attention; the bridge (no fused path) runs them one by one
    from interp_heads.models.backends import backend_of

    hooked = backend_of(tiny).name == "hooked"
    assert LocalExecutor(tiny).copies == (PREFIX_COPIES["cpu"] if hooked else 1)
    assert PREFIX_COPIES["cpu"] > 1
    local = _sweep(tiny, cfg, tmp_path / "local")
    for other in (packed, wide, remote, local):
        assert plain.generations.equals(other.generations)
        assert plain.records.equals(other.records)
    # the mask's scope and factor are in every condition's resume key (as the kind is)
    default = _sweep(
        tiny,
        SweepConfig(ks=[2, 5], seeds=1, ablation="scale", max_new_tokens=5),
        tmp_path / "default",
    )

    def keys(d):
        return {
            p.name: json.loads(p.read_text())["resume_key"]
            for p in (tmp_path / d / "conditions").glob("toy__*.json")
        }

    a, b = keys("plain"), keys("default")
    assert a.keys() == b.keys() and len(a) == 5
    assert all(a[n] != b[n] for n in a)
    assert not plain.generations.equals(default.generations)


def test_default_mask_settings_keep_the_config_and_resume_key():
    from interp_heads.config.run_config import RunConfig
    from interp_heads.store import digest
    from interp_heads.store.resume import condition_key
    from interp_heads.sweep.loop import SweepConfig

    cfg = SweepConfig(ks=[2], ablation="mean")
    assert "positions" not in cfg.to_dict() and "scale" not in cfg.to_dict()
    assert cfg.mask_key() is None
    args = ({"m": 1}, "rows", [(0, 1)], "mean", "vals", {"g": 1}, [])
    plain = digest(
        {
            "v": 1,
            "unit": "condition",
            "model": {"m": 1},
            "rows": "rows",
            "heads": [[0, 1]],
            "ablation": {"kind": "mean", "values": "vals"},
            "generation": {"g": 1},
            "metrics": [],
        },
        32,
    )  # the key's layout as the module docstring states it, before mask settings existed
    assert condition_key(*args) == plain
    assert condition_key(*args, mask={"positions": "last"}) != plain
    assert RunConfig().digest() == RunConfig(positions="all", scale_factor=1e-4).digest()
    assert RunConfig().digest() != RunConfig(positions="last").digest()
    assert SweepConfig(ks=[2], ablation="scale").mask_key() == {"factor": 1e-4}
