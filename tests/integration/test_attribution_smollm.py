"""Attribution on the embedded SmolLM2 (GQA: 9 query heads share 3 KV heads)."""

from __future__ import annotations

import pandas as pd
import pytest
import torch
from transformer_lens import patching

from interp_heads.attribution import answer_token, attribute_heads, exact_scores, make_batches
from interp_heads.attribution.inputs import logit_diff
from interp_heads.tasks.schema import Example, Task

pytestmark = pytest.mark.slow

TASK = Task(
    "capitals",
    [
        Example(
            "fr",
            "capitals",
            "The capital of France is",
            "Paris",
            corrupted_prompt="The capital of Italy is",
            corrupted_answer="Rome",
        )
    ],
)


def test_exact_equals_transformer_lens_on_smollm(smollm):
    (b,) = make_batches(smollm, TASK, fmt="plain")
    with torch.no_grad():
        clean_logits, cache = smollm.run_with_cache(
            b.clean, names_filter=lambda n: n.endswith("hook_z")
        )
        ld_clean = logit_diff(clean_logits[:, -1], b).mean()
        ld_corr = logit_diff(smollm(b.corrupted)[:, -1], b).mean()
    assert ld_clean > 0 > ld_corr

    def metric(logits):
        return (logit_diff(logits[:, -1], b).mean() - ld_corr) / (ld_clean - ld_corr)

    # TransformerLens' get_act_patch_attn_head_out_all_pos is generic_activation_patch over all
    # (layer, head); on 2 shared CPU cores its 270 forwards take minutes, so CI checks the same
    # function on one head in every 4th layer (index_df), and the full grid runs in the bench.
    heads = [(layer, (2 * layer + 1) % 9) for layer in range(0, 30, 4)]
    index = pd.DataFrame(heads, columns=["layer", "head"])
    ref = patching.generic_activation_patch(
        smollm,
        b.corrupted,
        cache,
        metric,
        patching.layer_head_vector_patch_setter,
        "z",
        index_df=index,
    ).cpu()
    ours = exact_scores(smollm, [b], heads=heads)
    assert torch.allclose(ours[tuple(zip(*heads, strict=True))], ref, atol=1e-4)
    assert torch.isnan(ours).sum() == 270 - len(heads)


def test_all_methods_run_on_smollm(smollm):
    exact = attribute_heads(smollm, TASK, "exact", fmt="plain")
    assert exact.scores.shape == (30, 9) and torch.isfinite(exact.scores).all()
    atp = attribute_heads(smollm, TASK, "atp", fmt="plain")
    assert len(set(atp.top(20)) & set(exact.top(20))) >= 5
    assert exact.provenance["model"]["spec"] == "smollm2-135m"


def test_answer_token_chat_and_plain(smollm):
    paris = smollm.to_tokens("Paris", prepend_bos=False)[0, 0]
    spaced = smollm.to_tokens(" Paris", prepend_bos=False)[0, 0]
    assert paris != spaced
    assert answer_token(smollm, "Paris", chat=True) == int(paris)
    assert answer_token(smollm, "Paris", chat=False, prompt="The capital of France is") == int(
        spaced
    )
