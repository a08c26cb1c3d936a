"""The real-weights induction check's pieces (``zoo.real_induction``) on the tiny models: the
hypergeometric p against a count over every draw, the repeated-token task's construction, the
next-token metric's positions against a loop, and the truth's intersection on a hand-planted
model whose only copying head is known."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from interp_heads.errors import InputError
from interp_heads.zoo import real_induction as ri


@pytest.mark.parametrize(("n_total", "n_truth", "k"), [(12, 4, 5), (10, 7, 3), (9, 0, 4)])
def test_hypergeom_p_equals_the_share_of_draws_with_that_many_truth_heads_or_more(
    n_total, n_truth, k
):
    truth = set(range(n_truth))
    draws = list(itertools.combinations(range(n_total), k))
    assert len(draws) == math.comb(n_total, k)
    for overlap in range(k + 1):
        at_least = sum(len(truth.intersection(d)) >= overlap for d in draws)
        assert ri.hypergeom_p(overlap, n_total, n_truth, k) == pytest.approx(
            at_least / len(draws), abs=1e-12
        )


def test_heads_above_and_agreed_take_the_threshold_inclusively_and_intersect():
    scores = np.array([[0.1, 0.3, 0.29], [0.5, -1.0, 0.3]])
    assert ri.heads_above(scores, 0.3) == [(0, 1), (1, 0), (1, 2)]
    assert ri.heads_above(scores, 0.6) == []
    assert ri.agreed([(1, 2), (0, 1), (1, 0)], [[1, 0], (0, 2), (1, 2)]) == [(1, 0), (1, 2)]
    assert ri.agreed([(0, 0)], []) == []


def test_repeated_tokens_repeat_a_block_of_distinct_tokens_and_corrupt_it_with_fresh_ones(tiny):
    rt = ri.repeated_tokens(tiny, n=5, length=7, seed=3)
    pool = set(ri.word_pool(tiny))
    assert all(tiny.tokenizer.decode([i]).isalpha() for i in pool)  # byte vocabulary: letters
    assert rt.first.shape == rt.fresh.shape == (5, 7)
    for f, g, text, corr in zip(rt.first, rt.fresh, rt.texts, rt.corrupted_texts, strict=True):
        assert len(set(f)) == 7 and len(set(g)) == 7 and not set(f) & set(g)
        assert set(f) | set(g) <= pool
        ids = tiny.to_tokens(text, prepend_bos=False)[0].tolist()
        assert ids == list(f) + list(f)
        assert tiny.to_tokens(corr, prepend_bos=False)[0].tolist() == list(f) + list(g)
    again = ri.repeated_tokens(tiny, n=5, length=7, seed=3)
    assert again.texts == rt.texts and ri.repeated_tokens(tiny, 5, 7, seed=4).texts != rt.texts
    with pytest.raises(InputError, match="distinct tokens"):
        ri.repeated_tokens(tiny, n=1, length=40)


def test_as_task_cuts_each_sequence_into_a_copy_prefix_and_its_next_token():
    first = [[" red", " cat", " sun", " box", " pen"], [" dog", " ink", " map", " cup", " hat"]]
    fresh = [[" fig", " oak", " jam", " owl", " elk"], [" gem", " yak", " bee", " ant", " cow"]]
    rt = ri.Repeated(np.zeros((2, 5)), np.zeros((2, 5)),
                     tuple("".join(f + f) for f in first),
                     tuple("".join(f + g) for f, g in zip(first, fresh, strict=True)))  # fmt: skip
    task = ri.as_task(rt, seed=1)
    assert task.meta["fmt"] == "plain" and len(task) == 2
    for ex, f, g in zip(task.examples, first, fresh, strict=True):
        p = next(p for p in range(2, 5) if ex.prompt == "".join(f + f[:p]))
        assert ex.answer == f[p].strip()
        assert ex.corrupted_prompt == "".join(f + g[:p]) and ex.corrupted_answer == g[p].strip()
    bad = ri.Repeated(np.zeros((1, 3)), np.zeros((1, 3)), ("abcabc",), ("abcdef",))
    with pytest.raises(InputError, match="word tokens"):
        ri.as_task(bad)
    short = ri.Repeated(np.zeros((1, 2)), np.zeros((1, 2)), (" a b a b",), (" a b c d",))
    with pytest.raises(InputError, match="at least 3"):
        ri.as_task(short)


def test_next_token_logprob_reads_the_copy_positions_against_a_loop(tiny):
    rt = ri.repeated_tokens(tiny, n=3, length=6, seed=0)
    toks = ri.tokens(tiny, rt.texts)
    with torch.no_grad():
        logits = tiny(toks)
    logp = logits.log_softmax(-1)
    want = [float(logp[b, 6 + j, int(rt.first[b, j + 1])]) for b in range(3) for j in range(5)]
    got = float(ri.next_token_logprob(tiny, logits, toks, 6))
    assert got == pytest.approx(sum(want) / len(want), rel=1e-5)


def _copying_planted():
    """The planted model (``testing.planted``) with its induction head ``L1H0`` also copying: its
    value reads the attended token's content and writes it where the unembedding reads it as that
    token's logit, so the model predicts a repeated block's next token through ``L1H0`` alone."""
    from interp_heads.testing.planted import _B, planted_model

    model = planted_model()
    content, slot = slice(_B, 2 * _B), slice(2 * _B, 3 * _B)
    with torch.no_grad():
        a1 = model.blocks[1].attn
        a1.W_V[0, content] = torch.eye(_B)
        a1.W_O[0, :, slot] = torch.eye(_B)
        model.unembed.W_U[slot] = 30.0 * model.embed.W_E[:, content].T
    return model


def test_the_planted_copying_head_is_the_only_head_both_readings_agree_on():
    model = _copying_planted()
    rt = ri.repeated_tokens(model, n=6, length=8, seed=0)
    det = ri.detector_scores(model, rt)
    eff, m_clean, m_corr = ri.patching_effects(model, rt)
    assert m_clean > m_corr
    assert det.shape == eff.shape == (2, 4)
    # the detector averages over every row, the first block's too: a perfect head scores 1/2
    assert det[1, 0] > 0.45 and eff[1, 0] > 0.9  # noising L1H0 removes the copy
    truth = ri.agreed(ri.heads_above(det, ri.DETECTOR_THRESHOLD),
                      ri.heads_above(eff, ri.PATCHING_THRESHOLD))  # fmt: skip
    assert truth == [(1, 0)]
    # the unplanted model copies nothing: there is no induction to patch
    from interp_heads.testing.planted import planted_model

    with pytest.raises(InputError, match="no induction to patch"):
        ri.patching_effects(planted_model(), rt)


def _result(**over) -> dict:
    """A real-weights result as ``real_induction`` returns it, on a 2 x 4 model."""
    det = [[0.0, 0.4, 0.1, 0.0], [0.45, 0.35, 0.0, 0.0]]
    eff = [[0.3, 0.2, 0.0, -0.01], [0.6, 0.01, 0.0, 0.0]]
    return {
        "model": "m", "n": 4, "length": 5, "seed": 0, "k": 3, "n_heads": 8,
        "detector_threshold": 0.3, "patching_threshold": 0.05, "clean_logprob": -1.0,
        "corrupted_logprob": -9.0, "detector_heads": ["L0H1", "L1H0", "L1H1"],
        "patching_heads": ["L0H0", "L0H1", "L1H0"], "truth": ["L0H1", "L1H0"],
        "method": "atp", "topk": ["L1H0", "L0H0", "L0H2"], "overlap": 1,
        "p": ri.hypergeom_p(1, 8, 2, 3), "overlap_detector": 1,
        "p_detector": ri.hypergeom_p(1, 8, 3, 3), "min_patching_effect": -0.01,
        "detector_scores": det, "patching_effects": eff,
        "seconds": {"detector": 1.0, "patching": 2.0, "ranking": 3.0, "total": 6.0},
    } | over  # fmt: skip


def test_the_page_section_names_the_truth_the_misses_and_the_target(tmp_path):
    import json

    from interp_heads.studies.ground_truth.page import write_page

    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "real_induction.json").write_text(json.dumps(_result()))
    manifest = {"size": "full", "seconds": 60, "models": {}, "real_induction": {"overlap": 1}}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (page,) = write_page(folder, tmp_path / "docs", tmp_path / "none.json")
    text = page.read_text()
    assert "## Real weights: induction on m" in text
    row = next(line for line in text.splitlines() if line.startswith("| 8 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    # heads, detector, patching, both, both/either (2 of 4), top-k, in truth, p, in det, p
    assert cells[:5] == ["8", "3", "3", "2", "0.50"]
    assert cells[5] == "L1H0, L0H0, L0H2" and cells[6] == "1" and cells[8] == "1"
    assert float(cells[7]) == pytest.approx(1 - math.comb(6, 3) / math.comb(8, 3), rel=0.01)
    assert "Detector only: L1H1; patching only: L0H0." in text
    assert "- Target: at least 6 of top-3 among the detector's heads: missed (1)." in text
    assert "L0H0 (detector 0.00, patching 0.30); L0H2 (detector 0.10, patching 0.00)" in text
    assert "Truth heads the top-3 leaves out: L0H1 (detector 0.40, patching 0.20)." in text
    # the other cuts, p by hand: at 0.1, 2 of 3 among 4 of 8 heads: (C(4,2) C(4,1) + C(4,3)) / C(8,3)
    assert ("0.1: 2 of 3 (4 heads, p 0.5); 0.2: 1 of 3 (3 heads, p 0.82); "
            "0.3: 1 of 3 (3 heads, p 0.82); 0.4: 1 of 3 (2 heads, p 0.64)") in text  # fmt: skip


def test_the_study_reuses_a_stored_real_result_and_redoes_it_when_its_parameters_change(
    tmp_path, monkeypatch
):
    import json

    from interp_heads.studies.ground_truth import run_real_induction

    calls = []

    def fake(model, **params):
        calls.append(params)
        return _result(**params)

    monkeypatch.setattr("interp_heads.models.load.load_model", lambda spec: object())
    monkeypatch.setattr(ri, "real_induction", fake)
    params = {"n": 4, "length": 5, "seed": 0}
    entry = run_real_induction(tmp_path, params, quiet=True)
    assert entry["overlap"] == 1 and entry["truth_size"] == 2 and len(calls) == 1
    stored = json.loads((tmp_path / "real_induction.json").read_text())
    assert stored["n"] == 4 and stored["model"] == "smollm2-135m"
    run_real_induction(tmp_path, params, quiet=True)
    assert len(calls) == 1  # read back
    run_real_induction(tmp_path, {**params, "length": 6}, quiet=True)
    run_real_induction(tmp_path, {**params, "length": 6}, quiet=True, force=True)
    assert [c["length"] for c in calls] == [5, 6, 6]
