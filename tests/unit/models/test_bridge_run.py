"""A whole run on the bridge backend (tl4 env, ``make test-tl4``): ``interp-heads run`` on the tiny
model's shapes as a random Llama checkpoint ranks its heads with a gradient method, masks the TopK
while it generates and writes the report; every masked answer equals Hugging Face's own
``generate`` with those heads' slices of the ``o_proj`` input zeroed (a plain torch
forward-pre-hook, one example at a time: no hook_z, no padding, no KV cache of ours)."""

from __future__ import annotations

import json
import warnings

import pandas as pd
import pytest
import torch

from interp_heads.cli import main
from interp_heads.heads import parse_heads
from interp_heads.models.tl_compat import HAS_BRIDGE
from tests.helpers import DATA

pytestmark = pytest.mark.skipif(not HAS_BRIDGE, reason="the bridge backend needs TL 4 (tl4 env)")

EDITS = {
    'attribution = "atp"': 'attribution = "ablation_atp"',
    'ablation = "mean"': 'ablation = "zero"',
    "ks = [2, 4, 8]": "ks = [2, 4]",
    'selections = ["topk", "randomk", "layermatched"]': 'selections = ["topk", "randomk"]',
    "seeds = 2": "seeds = 1",
}


@pytest.fixture(scope="module")
def bridge_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("bridge_run")
    text = (DATA / "tiny.toml").read_text().replace("tests/data/", f"{DATA}/")
    for old, new in EDITS.items():
        assert old in text
        text = text.replace(old, new)
    (root / "c.toml").write_text(text + '\nbackend = "bridge"\nfree_form = true\n')
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        argv = ["run", "--config", str(root / "c.toml"), "--out", str(root / "run"), "--quiet"]
        assert main(argv) == 0
    return root / "run"


def test_the_run_is_whole_and_names_its_backend(bridge_run):
    manifest = json.loads((bridge_run / "manifest.json").read_text())
    assert manifest["status"] == "complete" and "bridge" in json.dumps(manifest["model"])
    ranking = pd.read_csv(bridge_run / "ranking.csv")
    assert set(ranking.method) == {"ablation_atp"} and len(ranking) == 12
    for name in ("index.html", "summary.csv", "sweep.parquet", "known_heads.csv"):
        assert (bridge_run / name).exists(), name


def test_masked_answers_equal_hf_generate_with_zeroed_o_proj_slices(bridge_run):
    from transformers import AutoModelForCausalLM

    from interp_heads.generation.decode import stop_token_ids
    from interp_heads.models.backends.bridge import tiny_checkpoint
    from interp_heads.models.specs import load_any_model
    from interp_heads.pipeline.loading import load_any_task
    from interp_heads.tasks.prompts import render
    from interp_heads.testing.checkpoints import zero_head_pre_hook

    model = load_any_model("tiny", backend="bridge")  # the run's weights: the same saved folder
    hf = AutoModelForCausalLM.from_pretrained(tiny_checkpoint(), attn_implementation="eager")
    hf.eval().generation_config.eos_token_id = sorted(stop_token_ids(model))
    task = {e.id: e for e in load_any_task(str(DATA / "tiny_echo.jsonl"))}
    gens = pd.read_json(bridge_run / "generations.jsonl", lines=True)
    masked = gens[gens.selection != "baseline"]
    assert len(masked) == 8 * 4 and masked.heads.str.len().min() > 0
    d_head, tokenizer = model.cfg.d_head, model.tokenizer
    for row in gens.itertuples():
        heads = parse_heads(row.heads, 3, 4) if row.heads else []
        hooks = [
            hf.model.layers[layer].self_attn.o_proj.register_forward_pre_hook(
                zero_head_pre_hook(head, d_head)
            )
            for layer, head in heads
        ]
        try:
            prompt = render(model, [task[row.example_id].prompt], fmt="plain")[0]
            ids = model.to_tokens(prompt, prepend_bos=model.cfg.default_prepend_bos)
            with torch.no_grad():
                out = hf.generate(ids, max_new_tokens=4, do_sample=False, pad_token_id=0)
        finally:
            for h in hooks:
                h.remove()
        new = out[0, ids.shape[1] :].tolist()
        want = tokenizer.decode(new, skip_special_tokens=True)
        assert row.generation == want, (row.selection, row.k, row.example_id)
