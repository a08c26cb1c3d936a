"""Known-head detectors: equal to TransformerLens' detect_head, and each finds its planted head."""

from __future__ import annotations

import random

import pytest
import torch
from transformer_lens.head_detector import detect_head

from interp_heads.analysis.known_heads import (
    PATTERN_KINDS,
    known_head_scores,
    known_kinds,
    pattern_scores,
    successor_scores,
)
from interp_heads.figures.heatmaps import head_heatmap
from interp_heads.models.tl_compat import HAS_HOOKED
from interp_heads.testing.planted import PLANTED, planted_model

# the planted models are HookedTransformers built by hand; TransformerLens 4 (tl4 env) has none
hooked_only = pytest.mark.skipif(
    not HAS_HOOKED, reason="a planted HookedTransformer (no TL 4 twin)"
)


def _repeated_letters(n_seqs: int, half: int) -> list[str]:
    rng = random.Random(1)
    out = []
    for _ in range(n_seqs):
        h = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(half))
        out.append(h + h)
    return out


@pytest.mark.parametrize("model_fn", ["tiny", pytest.param("planted", marks=hooked_only)])
def test_pattern_scores_equal_detect_head(model_fn, tiny):
    model = tiny if model_fn == "tiny" else planted_model()
    seqs = _repeated_letters(3, 12)
    tokens = model.to_tokens(seqs)
    assert tokens.shape == (3, 24)  # one byte token per letter: the same inputs for both
    got = pattern_scores(model, tokens)
    for kind in PATTERN_KINDS:
        ref = detect_head(model, seqs, f"{kind}_head")
        torch.testing.assert_close(got[kind].scores, ref.float(), atol=1e-5, rtol=0)


@hooked_only
@pytest.mark.parametrize("kind", list(PLANTED))
def test_planted_head_ranks_first(kind):
    scores = known_head_scores(planted_model(), n_seqs=8, half=12)
    assert scores[kind].top(1) == [PLANTED[kind]]


@hooked_only
def test_known_kinds_use_thresholds():
    scores = known_head_scores(planted_model(), n_seqs=8, half=12)
    kinds = known_kinds(scores, [(0, 1), (1, 0), (1, 2), (0, 0)])
    assert kinds == {
        (0, 1): ["previous_token"],
        (1, 0): ["induction"],
        (1, 2): ["successor"],
        (0, 0): [],
    }


@hooked_only
def test_planted_successor_is_hand_computed():
    """Successor score of the planted head by hand: content -> W_U of the successor."""
    model = planted_model()
    digits = [model.tokenizer.convert_tokens_to_ids(str(d)) for d in range(10)]
    scores = successor_scores(model, {"digits": digits})
    w_e, w_u = model.embed.W_E, model.unembed.W_U
    logits = w_e[digits[:-1], 32:64] @ w_u[96:128][:, digits]
    want = (logits.argmax(-1) == torch.arange(1, 10)).float().mean()
    assert float(scores.scores[1, 2]) == pytest.approx(float(want))
    assert float(scores.scores[0].abs().max()) == 0.0  # layer 0 writes nothing the unembed reads


def test_successor_without_ordinals_is_one_line_error(tiny):
    with pytest.raises(ValueError, match="no ordinal sequence"):
        successor_scores(tiny, {})


@hooked_only
def test_heatmap_marks_known_heads():
    scores = known_head_scores(planted_model(), n_seqs=4, half=12)
    marks = {kind: s.top(1) for kind, s in scores.items()}
    fig = head_heatmap(scores["induction"], "signed", markers=marks)
    traces = {t.name: (list(t.x), list(t.y)) for t in fig.data if t.type == "scatter"}
    assert traces["induction"] == ([0], [1]) and traces["previous_token"] == ([1], [0])
    assert fig.data[0].type == "heatmap"


@hooked_only
def test_run_step_stores_known_heads_and_the_report_marks_them(tmp_path):
    """known_step on the planted model: the table, the heatmap markers and the TopK kinds table
    name each planted head; a second run reuses the stored entry."""
    from interp_heads.attribution import HeadScores
    from interp_heads.pipeline.artefacts import Inputs
    from interp_heads.pipeline.known_step import known_step
    from interp_heads.pipeline.record import RunRecord
    from interp_heads.pipeline.steps import Experiment
    from interp_heads.report import build_report
    from interp_heads.report.run import load_run, make_figures
    from interp_heads.store.folder import RunFolder

    folder = RunFolder(tmp_path)
    from interp_heads.config.run_config import RunConfig

    exp = Experiment(config=RunConfig(model="tiny"), folder=folder, model=planted_model())
    record = RunRecord()
    table = known_step(exp, Inputs("known", {}), record).known_table
    marked = {k: v for k, v in PLANTED.items() if k != "duplicate_token"}  # it scores 0.27 < 0.3
    for kind, head in PLANTED.items():
        first = table[(table.kind == kind) & (table["rank"] == 1)]
        assert (int(first.layer.iloc[0]), int(first["head"].iloc[0])) == head
        assert record.manifest.known_heads[kind] == (
            ["L{}H{}".format(*head)] if kind in marked else []
        )
    ranking = torch.zeros(2, 4)
    ranking[PLANTED["induction"]], ranking[PLANTED["successor"]] = 2.0, 1.0
    folder.write_rankings({"t": HeadScores(ranking, "m", "t")})
    record.note(ks=[2], steps=["attribute", "known"])
    record.write_manifest(exp, "complete")
    figs = make_figures(load_run(tmp_path))
    marks = {t.name: list(zip(t.y, t.x, strict=True)) for t in figs["heatmap_t"].data if t.name}
    assert {kind: marks[kind] for kind in marked} == {k: [h] for k, h in marked.items()}
    assert "duplicate_token" not in marks
    page = build_report(tmp_path).read_text()
    assert "L1H0 (induction, rank 1), L1H2 (successor, rank 2)" in page
    before = folder.known_entry.stat().st_mtime_ns
    known_step(exp, Inputs("known", {}), record)
    assert folder.known_entry.stat().st_mtime_ns == before  # reused, not recomputed


@pytest.mark.skipif(HAS_HOOKED, reason="needs the Hugging Face model under the bridge (tl4 env)")
def test_successor_scores_equal_a_hand_computation_on_the_hf_weights(tiny):
    """On the bridge: the OV circuit of each head read straight from the HF modules (v_proj,
    o_proj, final norm, lm_head; query head h reads key/value group h // (n_heads / n_kv))."""
    hf = tiny.original_model
    digits = [tiny.tokenizer.convert_tokens_to_ids(str(d)) for d in range(10)]
    got = successor_scores(tiny, {"digits": digits})
    cfg, n_heads = hf.config, hf.config.num_attention_heads
    d_head, group = cfg.hidden_size // n_heads, n_heads // cfg.num_key_value_heads
    with torch.no_grad():
        eff = hf(torch.tensor(digits)[:, None], output_hidden_states=True).hidden_states[1][:, 0]
        want = torch.zeros(cfg.num_hidden_layers, n_heads)
        for layer, block in enumerate(hf.model.layers):
            v = block.self_attn.v_proj(block.input_layernorm(eff))  # token (kv_head d_head)
            for h in range(n_heads):
                v_h = v[:, (h // group) * d_head : (h // group + 1) * d_head]
                out = v_h @ block.self_attn.o_proj.weight[:, h * d_head : (h + 1) * d_head].T
                logits = hf.lm_head(hf.model.norm(out))[:, digits]  # token digit
                best = logits[:-1].argmax(-1)
                want[layer, h] = (best == torch.arange(1, 10)).float().mean()
    torch.testing.assert_close(got.scores, want, atol=0, rtol=0)
