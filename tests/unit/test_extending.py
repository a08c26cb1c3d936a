"""The worked examples of docs/extending.md: a toy attribution method, ablation kind, metric,
executor, selection and model backend, each defined here and registered with one decorator call,
then run through ``run`` on the tiny model. Each is checked against something computed independently of the toolkit's code path."""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
import torch

from interp_heads.attribution.methods import METHODS, Method
from interp_heads.execution.base import generate_masked
from interp_heads.execution.registry import EXECUTORS
from interp_heads.interventions.kinds import KINDS, Ablation
from interp_heads.interventions.selections import SELECTIONS, Selection
from interp_heads.metrics.base import Metric
from interp_heads.metrics.registry import METRICS
from interp_heads.models.backends import BACKENDS
from interp_heads.models.backends.hooked import HookedBackend
from interp_heads.pipeline.experiment import RunConfig, run_pipeline

DATA = Path(__file__).resolve().parents[1] / "data"


def _run(out, **over):
    d = {
        "model": "tiny",
        "tasks": [str(DATA / "tiny_echo.jsonl")],
        "n_rank": 4,
        "n_eval": 6,
        "attribution": "atp",
        "ks": [2, 4],
        "selections": ["topk", "randomk"],
        "seeds": 1,
        "metrics": ["accuracy"],
        "max_new_tokens": 3,
        "batch_size": 4,
        "filter_correct": False,
        "verify": 0,
    }
    d.update(over)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the random model answers nothing: low-baseline warnings
        run_pipeline(RunConfig.from_dict(d), out, quiet=True)
    return out


@pytest.fixture
def registered():
    """Registers entries for one test and removes them afterwards."""
    added = []

    def add(registry, cls):
        registry.register(cls)
        added.append((registry, cls.name))
        return cls

    yield add
    for registry, name in added:
        registry.unregister(name)


# ----------------------------------------------------------------------------- a method
class LastLayersFirst(Method):
    """A toy ranking: a head's score is its position in the model, later layers higher."""

    name = "last_layers_first"
    target = "layer * n_heads + head"
    signed = True

    def score(self, model, task, batches, opts, per_example):
        n_layers, n_heads = model.cfg.n_layers, model.cfg.n_heads
        scores = torch.arange(n_layers * n_heads, dtype=torch.float).reshape(n_layers, n_heads)
        n = sum(len(b) for b in batches)
        per_example.append(scores.expand(n, n_layers, n_heads).clone())  # the same per example
        return scores, self.target


def test_a_new_attribution_method(registered, tmp_path):
    registered(METHODS, LastLayersFirst)
    run = _run(tmp_path / "run", attribution="last_layers_first")
    ranking = pd.read_csv(run / "ranking.csv").sort_values("rank")
    assert ranking["label"].tolist()[:3] == ["L2H3", "L2H2", "L2H1"]  # the tiny model: 3 x 4
    topk = pd.read_json(run / "generations.jsonl", lines=True)
    assert set(topk[(topk.selection == "TopK") & (topk.k == 2)]["heads"]) == {"L2H3,L2H2"}
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["config"]["attribution"] == "last_layers_first"


# ----------------------------------------------------------------------------- an ablation kind
class FirstPromptMean(Ablation):
    """A toy kind: a masked head's z is its mean over the first evaluated prompt only."""

    name = "first_prompt_mean"

    def values(self, model, prompts, *, batch_size=32):
        from interp_heads.interventions.means import head_means

        return head_means(model, prompts[:1])

    def replacement(self, layer, heads, values, generator):
        return values[layer][heads].clone()


def test_a_new_ablation_kind(registered, tmp_path, tiny):
    registered(KINDS, FirstPromptMean)
    run = _run(tmp_path / "run", ablation="first_prompt_mean")
    gens = pd.read_json(run / "generations.jsonl", lines=True, dtype={"example_id": str})
    row = gens[(gens.selection == "TopK") & (gens.k == 4)]
    heads = [(int(h[1]), int(h[3])) for h in row["heads"].iloc[0].split(",")]
    # the reference: plain TransformerLens hooks that write the first prompt's mean z by hand
    from interp_heads.generation.decode import generate
    from interp_heads.tasks import load_task
    from interp_heads.tasks.prompts import render

    task = load_task(str(DATA / "tiny_echo.jsonl"))
    ids = row["example_id"].tolist()
    prompts = render(tiny, [e.prompt for e in task if e.id in ids], fmt=task.fmt or "auto")
    _, cache = tiny.run_with_cache(tiny.to_tokens(prompts[0], prepend_bos=False))
    hooks = []
    for layer in sorted({h[0] for h in heads}):
        mean = cache[f"blocks.{layer}.attn.hook_z"][0].mean(0)  # [head d_head]
        mine = [h for lay, h in heads if lay == layer]

        def hook(z, hook, mean=mean, mine=mine):
            z = z.clone()
            z[:, :, mine] = mean[mine]
            return z

        hooks.append((f"blocks.{layer}.attn.hook_z", hook))
    with tiny.hooks(fwd_hooks=hooks):
        want = generate(tiny, prompts, 3, batch_size=4)
    assert row.set_index("example_id").loc[ids, "generation"].tolist() == want


# ----------------------------------------------------------------------------- a metric
class ShortAnswer(Metric):
    """A toy metric: 1 when the answer's first line has at most two characters."""

    name = "short_answer"
    label = "Short answer"

    def score(self, items):
        return [float(len(it.mt.splitlines()[0] if it.mt else "") <= 2) for it in items]


def test_a_new_metric(registered, tmp_path):
    registered(METRICS, ShortAnswer)
    run = _run(tmp_path / "run", metrics=["accuracy", "short_answer"])
    records = pd.read_parquet(run / "sweep.parquet")
    mine = records[records.metric == "short_answer"]
    assert set(mine["label"]) == {"Short answer"} and len(mine) == len(records) / 2
    gens = pd.read_json(run / "generations.jsonl", lines=True, dtype={"example_id": str})
    keys = ["task", "selection", "k", "seed", "example_id"]
    both = mine.merge(gens, on=keys)
    by_hand = [float(len((g or "").splitlines()[0] if g else "") <= 2) for g in both.generation]
    assert both["value"].tolist() == by_hand


# ----------------------------------------------------------------------------- an executor
class Reversed:
    """A toy executor: generates the pending units last first, in this process."""

    name = "reversed"
    seen: list = []

    def __init__(self, model):
        self.model = model

    @classmethod
    def build(cls, settings, model):
        return cls(model)

    def run(self, units):
        for unit in reversed(list(units)):
            Reversed.seen.append(unit.key)
            outs, seconds = generate_masked(self.model, unit, unit.context)
            yield [(unit, outs, seconds)]

    def close(self):
        pass


def test_a_new_executor(registered, tmp_path):
    registered(EXECUTORS, Reversed)
    Reversed.seen.clear()
    mine = _run(tmp_path / "reversed", executor="reversed")
    local = _run(tmp_path / "local")
    assert len(Reversed.seen) == 1 + 2 * 2  # baseline + (TopK, RandomK) x 2 ks
    assert Reversed.seen[0].endswith("__k4__s0")  # the last planned condition ran first
    for table in ("sweep.parquet", "summary.parquet"):
        a, b = pd.read_parquet(mine / table), pd.read_parquet(local / table)
        pd.testing.assert_frame_equal(a, b)


# ----------------------------------------------------------------------------- a model backend
class CountingHooked(HookedBackend):
    """A toy backend: the hooked backend, counting the model's forward passes."""

    name = "counting"
    forwards = 0

    def load(self, spec, device, dtype, **kwargs):
        return self.counted(super().load(spec, device, dtype, **kwargs))

    def tiny(self, device=None):
        return self.counted(super().tiny(device))

    def counted(self, model):
        forward = model.forward

        def counting(*args, **kwargs):
            CountingHooked.forwards += 1
            return forward(*args, **kwargs)

        model.forward = counting
        model.interp_heads_source["backend"] = self.name  # backend_of(model) finds this backend
        return model


def test_a_new_model_backend(registered, tmp_path):
    from interp_heads.models.tl_compat import HookedTransformer

    registered(BACKENDS, CountingHooked)
    CountingHooked.forwards = 0
    calls = []  # the reference: torch's own count of calls of a whole model
    handle = torch.nn.modules.module.register_module_forward_pre_hook(
        lambda module, args: calls.append(1) if isinstance(module, HookedTransformer) else None
    )
    try:
        mine = _run(tmp_path / "counting", backend="counting")
    finally:
        handle.remove()
    hooked = _run(tmp_path / "hooked")
    assert CountingHooked.forwards == len(calls) > 0
    manifest = json.loads((mine / "manifest.json").read_text())
    assert manifest["config"]["backend"] == "counting"
    assert manifest["model"]["backend"] == "counting"  # so it never resumes a hooked run
    for table in ("ranking.csv", "sweep.parquet", "summary.parquet"):
        read = pd.read_csv if table.endswith(".csv") else pd.read_parquet
        pd.testing.assert_frame_equal(read(mine / table), read(hooked / table))


# ----------------------------------------------------------------------------- a selection
@dataclass(frozen=True)
class FirstLayerK(Selection):
    """A toy selection: the first k heads of layer 0, then of layer 1 ... (deterministic)."""

    name = "first_layer_k"
    display = "FirstLayerK"
    dash = "longdash"

    n_layers: int
    n_heads: int

    @classmethod
    def build(cls, ctx):
        return cls(ctx.n_layers, ctx.n_heads)

    def select(self, k, seed=0):
        return [(i // self.n_heads, i % self.n_heads) for i in range(k)]


def test_a_new_selection(registered, tmp_path):
    registered(SELECTIONS, FirstLayerK)
    run = _run(tmp_path / "run", selections=["topk", "first_layer_k"])
    gens = pd.read_json(run / "generations.jsonl", lines=True)
    mine = gens[gens.selection == "FirstLayerK"]
    assert set(mine.k) == {2, 4} and set(mine.seed) == {0}  # deterministic: one draw
    assert set(mine[mine.k == 4]["heads"]) == {"L0H0,L0H1,L0H2,L0H3"}
    summary = pd.read_parquet(run / "summary.parquet")
    assert "FirstLayerK" in set(summary.selection)
    sig = (run / "significance.csv").read_text()
    assert "FirstLayerK" not in sig  # not a random control: TopK is not tested against it
