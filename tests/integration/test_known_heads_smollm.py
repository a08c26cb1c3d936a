"""Known-head detectors on the embedded SmolLM2 equal TransformerLens' detect_head."""

from __future__ import annotations

import random

import pytest
import torch
from transformer_lens.head_detector import detect_head

from interp_heads.analysis.known_heads import PATTERN_KINDS, known_head_scores, pattern_scores

pytestmark = pytest.mark.slow

WORDS = "apple river stone cloud paper window garden silver music orange table winter".split()


def test_pattern_scores_equal_detect_head(smollm):
    rng = random.Random(0)
    seqs = []
    for _ in range(2):
        half = " " + " ".join(rng.sample(WORDS, 10))
        seqs.append(half + half)
    ours = {kind: torch.zeros(30, 9) for kind in PATTERN_KINDS}
    for seq in seqs:  # one sequence at a time: token counts may differ between sequences
        got = pattern_scores(smollm, smollm.to_tokens(seq))
        for kind in PATTERN_KINDS:
            ours[kind] += got[kind].scores / len(seqs)
    for kind in PATTERN_KINDS:
        ref = detect_head(smollm, seqs, f"{kind}_head")
        torch.testing.assert_close(ours[kind], ref.float(), atol=1e-5, rtol=0)


def test_embedded_model_has_each_kind(smollm):
    """Induction and previous-token heads exist in trained models (Olsson et al. 2022)."""
    scores = known_head_scores(smollm, n_seqs=4, half=20)
    assert float(scores["induction"].scores.max()) > 0.3
    assert float(scores["previous_token"].scores.max()) > 0.4
    assert "successor" in scores and float(scores["successor"].scores.max()) > 0.15
