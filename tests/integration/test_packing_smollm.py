"""On SmolLM2: packed, condition-batched generation equals one condition at a time, token for token."""

from __future__ import annotations

import pytest

from interp_heads.ablation import head_means, mask_heads
from interp_heads.generation import generate
from interp_heads.packing import PackedJob, generate_packed
from interp_heads.prompts import render
from interp_heads.selection import RandomK

pytestmark = pytest.mark.slow

PROMPTS = [
    "What is the capital of France?",
    "What is 7 + 5?",
    "Tom is taller than Ann. Ann is taller than Bob. Who is the shortest?",
    "Which language is spoken in Brazil?",
    "The key 'apple' maps to 4 and 'pear' maps to 9. What does 'pear' map to?",
    "Name a colour of the sky.",
    "Complete: one, two, three,",
    "Who wrote Hamlet?",
]


@pytest.mark.parametrize(
    ("method", "use_cache"), [("zero", True), ("mean", True), ("resample", True), ("mean", False)]
)
def test_packed_equals_alone(smollm, method, use_cache):
    prompts = render(smollm, PROMPTS)
    values = {
        "zero": None,
        "mean": head_means(smollm, prompts),
        "resample": head_means(smollm, prompts, per_prompt=True),
    }
    rk = RandomK(30, 9, salt="smollm")
    jobs = [PackedJob(prompts, [], values[method])] + [
        PackedJob(prompts, rk.select(k, seed), values[method], seed=seed)
        for k, seed in ((32, 0), (64, 1), (128, 2))
    ]
    kw = dict(use_cache=use_cache, stop_at_newline=True)
    alone = []
    for job in jobs:
        with mask_heads(
            smollm, job.heads, method, values=job.values, seed=job.seed, warn_if_idle=False
        ):
            alone.append(generate(smollm, prompts, 6, batch_size=8, **kw))
    packed = generate_packed(smollm, jobs, method, 6, pack_rows=12, **kw)
    assert packed == alone
    assert alone[0] != alone[-1]  # masking 128 heads changes answers
