"""On SmolLM2: packed, condition-batched generation equals one condition at a time, token for token."""

from __future__ import annotations

import pytest

from interp_heads.execution.packed import PackedJob, generate_packed
from interp_heads.generation.decode import generate
from interp_heads.interventions.masks import mask_heads
from interp_heads.interventions.means import head_means
from interp_heads.interventions.selections import RandomK
from interp_heads.tasks.prompts import render
from interp_heads.testing.tiny import MIXED_PROMPTS as PROMPTS

pytestmark = pytest.mark.slow


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
