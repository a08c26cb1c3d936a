"""The worked examples of docs/extending.md, run as the page prints them: a toy attribution method,
ablation kind, metric, executor, selection, model backend, study and pipeline step. Each section's code block is executed
(it registers its variant with one decorator line), run through ``run`` on the tiny model, checked
against something computed independently of the toolkit's code path, and unregistered."""

from __future__ import annotations

import json
import re
import warnings

import pandas as pd
import pytest
import torch

from interp_heads.attribution.methods import METHODS
from interp_heads.execution.registry import EXECUTORS
from interp_heads.interventions.kinds import KINDS
from interp_heads.interventions.selections import SELECTIONS
from interp_heads.metrics.registry import METRICS
from interp_heads.models.backends import BACKENDS
from interp_heads.pipeline.experiment import RunConfig, run_pipeline
from interp_heads.pipeline.steps import STEPS
from interp_heads.studies import STUDIES
from tests.helpers import DATA, ROOT

DOC = ROOT / "docs" / "extending.md"
REGISTRIES = (METHODS, KINDS, METRICS, EXECUTORS, SELECTIONS, BACKENDS, STUDIES, STEPS)


BASE = {
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


def _run(out, **over):
    d = {**BASE, **over}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the random model answers nothing: low-baseline warnings
        run_pipeline(RunConfig.from_dict(d), out, quiet=True)
    return out


def example_code(heading: str) -> str:
    """The Python code blocks of the section ``### heading`` of docs/extending.md."""
    section = DOC.read_text().split(f"\n### {heading}\n", 1)[1].split("\n### ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert blocks, f"docs/extending.md: no code block under {heading!r}"
    return "\n".join(blocks)


@pytest.fixture
def example():
    """Executes a docs section's code (which registers its variant) and returns its names;
    whatever it registered is unregistered after the test."""
    before = [set(registry.names()) for registry in REGISTRIES]

    def run(heading: str) -> dict:
        names = {"__name__": "docs_extending"}
        where = f"docs/extending.md ({heading})"
        # dont_inherit: the page's code runs as a reader's file would, without this module's
        # ``from __future__ import annotations`` (a dataclass then resolves its own annotations)
        exec(compile(example_code(heading), where, "exec", dont_inherit=True), names)
        return names

    yield run
    for registry, names in zip(REGISTRIES, before, strict=True):
        for name in set(registry.names()) - names:
            registry.unregister(name)


# ----------------------------------------------------------------------------- a method
def test_a_new_attribution_method(example, tmp_path):
    example("An attribution method")
    run = _run(tmp_path / "run", attribution="last_layers_first")
    ranking = pd.read_csv(run / "ranking.csv").sort_values("rank")
    assert ranking["label"].tolist()[:3] == ["L2H3", "L2H2", "L2H1"]  # the tiny model: 3 x 4
    topk = pd.read_json(run / "generations.jsonl", lines=True)
    assert set(topk[(topk.selection == "TopK") & (topk.k == 2)]["heads"]) == {"L2H3,L2H2"}
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["config"]["attribution"] == "last_layers_first"


# ----------------------------------------------------------------------------- an ablation kind
def test_a_new_ablation_kind_with_an_option_set_from_a_toml_file(example, tmp_path, tiny):
    example("An ablation kind")
    settings = {**BASE, "ablation": "first_prompts_mean"}
    toml = "".join(f"{key} = {json.dumps(value)}\n" for key, value in settings.items())
    path = tmp_path / "kind.toml"
    path.write_text(toml + "n_first = 2\n")
    config = RunConfig.from_toml(path)
    assert config.option("n_first") == 2
    # in the digest away from its default, left out at it (the default is the digest of old)
    assert config.digest() != RunConfig.from_dict({**settings, "n_first": 1}).digest()
    assert RunConfig.from_dict({**settings, "n_first": 1}).digest() == (
        RunConfig.from_dict(settings).digest()
    )
    run = tmp_path / "run"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the random model answers nothing: low-baseline warnings
        run_pipeline(config, run, quiet=True)
    assert json.loads((run / "manifest.json").read_text())["config"]["n_first"] == 2
    gens = pd.read_json(run / "generations.jsonl", lines=True, dtype={"example_id": str})
    row = gens[(gens.selection == "TopK") & (gens.k == 4)]
    heads = [(int(h[1]), int(h[3])) for h in row["heads"].iloc[0].split(",")]
    # the reference: plain TransformerLens hooks that write the first two prompts' mean z by hand
    from interp_heads.generation.decode import generate
    from interp_heads.tasks import load_task
    from interp_heads.tasks.prompts import render

    task = load_task(str(DATA / "tiny_echo.jsonl"))
    ids = row["example_id"].tolist()
    prompts = render(tiny, [e.prompt for e in task if e.id in ids], fmt=task.fmt or "auto")
    caches = [tiny.run_with_cache(tiny.to_tokens(p, prepend_bos=False))[1] for p in prompts[:2]]
    hooks = []
    for layer in sorted({h[0] for h in heads}):
        name = f"blocks.{layer}.attn.hook_z"
        mean = torch.cat([c[name][0] for c in caches]).mean(0)  # [head d_head]
        mine = [h for lay, h in heads if lay == layer]

        def hook(z, hook, mean=mean, mine=mine):
            z = z.clone()
            z[:, :, mine] = mean[mine]
            return z

        hooks.append((name, hook))
    with tiny.hooks(fwd_hooks=hooks):
        want = generate(tiny, prompts, 3, batch_size=4)
    assert row.set_index("example_id").loc[ids, "generation"].tolist() == want


def test_a_new_ablation_kinds_option_is_a_flag_of_ablate(example):
    from interp_heads.cli import build_parser

    example("An ablation kind")
    sub = build_parser()._subparsers._group_actions[0].choices
    flag = {a.dest: a for a in sub["ablate"]._actions}["n_first"]
    assert flag.option_strings == ["--n-first"] and flag.default == 1
    assert flag.help == "prompts the mean is taken over"


# ----------------------------------------------------------------------------- a metric
def test_a_new_metric(example, tmp_path):
    example("A metric")
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
def test_a_new_executor(example, tmp_path):
    names = example("An executor")
    seen = []  # the units in the order the executor generated them
    generate = names["generate_masked"]

    def recording(model, unit, context):
        seen.append(unit.key)
        return generate(model, unit, context)

    names["generate_masked"] = recording  # what the example's run() calls
    mine = _run(tmp_path / "reversed", executor="reversed")
    local = _run(tmp_path / "local")
    assert len(seen) == 1 + 2 * 2  # baseline + (TopK, RandomK) x 2 ks
    assert seen[0].endswith("__k4__s0")  # the last planned condition ran first
    for table in ("sweep.parquet", "summary.parquet"):
        a, b = pd.read_parquet(mine / table), pd.read_parquet(local / table)
        pd.testing.assert_frame_equal(a, b)


# ----------------------------------------------------------------------------- a model backend
def test_a_new_model_backend(example, tmp_path):
    from interp_heads.models.tl_compat import HookedTransformer

    counting = example("A model backend")["CountingHooked"]
    calls = []  # the reference: torch's own count of calls of a whole model
    handle = torch.nn.modules.module.register_module_forward_pre_hook(
        lambda module, args: calls.append(1) if isinstance(module, HookedTransformer) else None
    )
    try:
        mine = _run(tmp_path / "counting", backend="counting")
    finally:
        handle.remove()
    hooked = _run(tmp_path / "hooked")
    assert counting.forwards == len(calls) > 0
    manifest = json.loads((mine / "manifest.json").read_text())
    assert manifest["config"]["backend"] == "counting"
    assert manifest["model"]["backend"] == "counting"  # so it never resumes a hooked run
    for table in ("ranking.csv", "sweep.parquet", "summary.parquet"):
        read = pd.read_csv if table.endswith(".csv") else pd.read_parquet
        pd.testing.assert_frame_equal(read(mine / table), read(hooked / table))


# ----------------------------------------------------------------------------- a selection
def test_a_new_selection(example, tmp_path):
    example("A selection")
    run = _run(tmp_path / "run", selections=["topk", "first_layer_k"])
    gens = pd.read_json(run / "generations.jsonl", lines=True)
    mine = gens[gens.selection == "FirstLayerK"]
    assert set(mine.k) == {2, 4} and set(mine.seed) == {0}  # deterministic: one draw
    assert set(mine[mine.k == 4]["heads"]) == {"L0H0,L0H1,L0H2,L0H3"}
    summary = pd.read_parquet(run / "summary.parquet")
    assert "FirstLayerK" in set(summary.selection)
    sig = (run / "significance.csv").read_text()
    assert "FirstLayerK" not in sig  # not a random control: TopK is not tested against it


def test_a_new_selections_option_reaches_the_config_flags_and_digest(example, tmp_path):
    from interp_heads.cli.parser import build_parser

    example("A selection")
    run = _run(tmp_path / "run", selections=["topk", "first_layer_k"], start_layer=1)
    gens = pd.read_json(run / "generations.jsonl", lines=True)
    mine = gens[gens.selection == "FirstLayerK"]
    assert set(mine[mine.k == 4]["heads"]) == {"L1H0,L1H1,L1H2,L1H3"}  # layer 1's four heads
    assert json.loads((run / "manifest.json").read_text())["config"]["start_layer"] == 1
    settings = {**BASE, "selections": ["topk", "first_layer_k"]}
    at_default = RunConfig.from_dict({**settings, "start_layer": 0}).digest()
    assert at_default == RunConfig.from_dict(settings).digest()  # left out at its default
    assert RunConfig.from_dict({**settings, "start_layer": 1}).digest() != at_default
    sub = next(a for a in build_parser()._actions if a.dest == "command").choices
    assert "start_layer" in {a.dest for a in sub["ablate"]._actions}


# ----------------------------------------------------------------------------- a study
def test_a_new_study(example, tmp_path):
    names = example("A study")
    names["TwoAblations"].base = str(DATA / "tiny.toml")  # the page's config, on the tiny model
    from tests.helpers import cli

    runs, docs = tmp_path / "runs", tmp_path / "docs"
    assert cli("study", "two_ablations", "--size", "small", "--runs", runs, "--docs", docs) == 0
    want = []
    for kind in ("zero", "mean"):  # every number of the page from the folders' own summary.csv
        manifest = json.loads((runs / "two_ablations" / kind / "manifest.json").read_text())
        assert manifest["config"]["ablation"] == kind and manifest["config"]["n_eval"] == 8
        summary = pd.read_csv(runs / "two_ablations" / kind / "summary.csv")
        acc = summary[summary["metric"] == "accuracy"]
        want += [f"| {kind} | {r.selection} | {r.k} | {r.mean:.2f} |" for r in acc.itertuples()]
    page = (docs / "two_ablations.md").read_text().splitlines()
    assert page[2:] == want and len(want) >= 6


# ----------------------------------------------------------------------------- a pipeline step
def test_a_new_pipeline_step(example, tmp_path):
    example("A pipeline step")
    run = _run(tmp_path / "run")
    prompts = pd.read_json(run / "prompts.jsonl", lines=True)
    want = prompts.groupby("task").size().to_dict()  # the evaluated prompts, as stored
    assert json.loads((run / "eval_counts.json").read_text()) == want == {"tiny_echo": 6}
    steps = json.loads((run / "manifest.json").read_text())["steps"]
    assert steps[-2:] == ["eval_counts", "report"]
