"""Leading tokens that every row of a batch shares, read once (``generation.shared_start``).

The reference is independent of the shared start: each prompt generated alone (one row, so no
padding and nothing shared). ``tests/unit/models/test_families.py`` also checks it against
Hugging Face's own greedy generation with a head's output-projection slice zeroed.
"""

from __future__ import annotations

import pytest
import torch

from interp_heads.generation import shared_start
from interp_heads.generation.decode import batches, generate_tokens
from interp_heads.generation.kv_cache import KVCache
from interp_heads.generation.shared_start import shared_lead, split_at_lead
from interp_heads.interventions.masks import mask_heads
from interp_heads.interventions.means import head_means, position_means
from interp_heads.testing.tiny import tiny_model
from tests.helpers import SHARED_LEAD as LEAD
from tests.helpers import last_position_hooks
from tests.helpers import shared_start_spy as spy

QUESTIONS = ["ab", "what is the colour of the sky on a clear day", "x", "lorem ipsum dolor"]
PROMPTS = [LEAD + q for q in QUESTIONS]
HEADS = [(0, 1), (1, 3), (2, 0), (2, 2)]
GEN = dict(stop_at_eos=False)


@pytest.fixture(scope="module", params=["rotary", "standard"])
def model(request):
    return tiny_model(positional_embedding_type=request.param)


def alone(model, prompts, **gen) -> list[list[int]]:
    return [generate_tokens(model, [p], 8, batch_size=1, **GEN, **gen)[0] for p in prompts]


def test_the_lead_is_the_first_real_tokens_all_rows_share_and_each_row_keeps_one():
    pad = 0
    tokens = torch.tensor([[1, 2, 3, 4, 9], [pad, 1, 2, 3, 8], [pad, pad, 1, 2, 7]])
    mask = torch.tensor([[1, 1, 1, 1, 1], [0, 1, 1, 1, 1], [0, 0, 1, 1, 1]])
    assert shared_lead(tokens, mask) == 2  # the shortest row keeps its last token
    lead, rest, rest_mask = split_at_lead(tokens, mask, 2, pad)
    assert lead.tolist() == [[1, 2]]
    assert rest.tolist() == [[3, 4, 9], [pad, 3, 8], [pad, pad, 7]]
    assert rest_mask.tolist() == [[1, 1, 1], [0, 1, 1], [0, 0, 1]]
    same = torch.tensor([[5, 6, 7], [5, 6, 7]])
    assert shared_lead(same, torch.ones_like(same)) == 2
    assert shared_lead(torch.tensor([[5, 6, 7], [4, 6, 7]]), torch.ones_like(same)) == 0
    assert shared_lead(torch.tensor([[5, 6, 7]]), torch.ones((1, 3), dtype=torch.long)) == 0


def test_the_first_step_from_the_lead_gives_the_logits_of_one_pass(model, monkeypatch):
    """Under a mask at every position: the prompt pass's logits and the next step's, from the
    shared lead and each row's own tokens, equal those of one pass over the whole prompts."""
    (_, tokens, mask), *_ = batches(model, PROMPTS, 4, None)
    step = torch.full((4, 1), 5), torch.ones((4, 1), dtype=mask.dtype)
    width = tokens.shape[1] + 4
    with mask_heads(model, HEADS, "mean", values=head_means(model, PROMPTS)):
        whole = KVCache(model, 4, capacity=width)
        one, one_next = whole.step(tokens, mask, mask), whole.step(*step, None)
        shared, seen = KVCache(model, 4, capacity=width), spy(monkeypatch)
        first, first_next = shared.prompt_pass(tokens, mask), shared.step(*step, None)
        assert seen == [len(LEAD)]
        assert shared.cache.cache.length == tokens.shape[1] + 1  # in place, no buffer grown
        assert shared.cache.cache.entries[0].capacity == width
    torch.testing.assert_close(first, one, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(first_next, one_next, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("kind", ["mean", "zero", "scale", "resample"])
def test_masks_at_every_position_read_the_lead_once_and_each_row_equals_it_alone(
    model, monkeypatch, fast, kind
):
    values = head_means(model, PROMPTS, per_prompt=True) if kind == "resample" else None
    values = head_means(model, PROMPTS) if kind == "mean" else values
    plain = generate_tokens(model, PROMPTS, 8, batch_size=4, fast_attention=fast, **GEN)
    with mask_heads(model, HEADS, kind, values=values):
        reference = alone(model, PROMPTS, fast_attention=fast)
        seen = spy(monkeypatch)
        batched = generate_tokens(model, PROMPTS, 8, batch_size=4, fast_attention=fast, **GEN)
    assert seen == [len(LEAD)]
    assert batched == reference
    assert batched != plain  # the mask acts, so the comparison could fail


def test_unmasked_generation_reads_the_lead_once(model, monkeypatch):
    reference = alone(model, PROMPTS)
    seen = spy(monkeypatch)
    assert generate_tokens(model, PROMPTS, 8, batch_size=4, **GEN) == reference
    assert seen == [len(LEAD)]


@pytest.mark.parametrize(
    "case", ["last", "generated", "chosen positions", "position_mean", "own hook", "module hook"]
)
def test_hooks_that_may_tell_rows_or_passes_apart_read_every_row_whole(model, monkeypatch, case):
    """A mask at the last position of each pass, at the generated positions or at chosen
    positions, a mean per position, a hook of the caller's, a plain torch hook on a module: the
    lead is not shared, and every row still equals its prompt alone."""
    means = head_means(model, PROMPTS)
    kw: dict = {"positions": {"last": "last", "generated": "generated",
                              "chosen positions": [1, -2]}.get(case, "all")}  # fmt: skip
    gen: dict = {}
    if case == "position_mean":
        kw |= {"kind": "position_mean", "values": position_means(model, PROMPTS)}
    if case == "own hook":
        gen = {"fwd_hooks": last_position_hooks([(1, 0)], means)}
    handle = model.blocks[0].register_forward_hook(lambda m, i, o: None)
    try:
        if case != "module hook":
            handle.remove()
        with mask_heads(model, HEADS, **{"kind": "mean", "values": means, **kw}):
            reference = alone(model, PROMPTS, **gen)
            seen = spy(monkeypatch)
            batched = generate_tokens(model, PROMPTS, 8, batch_size=4, **GEN, **gen)
    finally:
        handle.remove()
    assert seen == []
    assert batched == reference


def test_a_short_lead_or_a_sliding_window_reads_every_row_whole(monkeypatch):
    short = ["Q: " + q for q in QUESTIONS]  # 3 shared tokens, below SHARED_START_MIN
    model = tiny_model()
    seen = spy(monkeypatch)
    assert generate_tokens(model, short, 8, batch_size=4, **GEN) == alone(model, short)
    assert seen == [] and shared_start.SHARED_START_MIN > 3
    windowed = tiny_model(
        use_local_attn=True, window_size=16, attn_types=["local", "global", "local"]
    )
    assert not shared_start.model_allows(windowed)
    assert generate_tokens(windowed, PROMPTS, 8, batch_size=4, **GEN) == alone(windowed, PROMPTS)
    assert seen == []


def test_rows_that_stop_leave_the_batch_after_a_shared_lead(model, monkeypatch):
    """A stop token some answers reach early: those rows leave the batch (the cache keeps the
    others), and every row still equals its prompt generated alone."""
    from collections import Counter

    from interp_heads.models.backends.static_kv import StaticCache

    rows = generate_tokens(model, PROMPTS, 8, batch_size=4, **GEN)
    token, _ = Counter(t for r in rows for t in r[1:5]).most_common(1)[0]
    gen = {"stop_after": model.tokenizer.convert_ids_to_tokens(token)}
    reference = alone(model, PROMPTS, **gen)
    kept, keep = [], StaticCache.keep
    monkeypatch.setattr(StaticCache, "keep", lambda self, r: (kept.append(len(r)), keep(self, r)))
    seen = spy(monkeypatch)
    batched = generate_tokens(model, PROMPTS, 8, batch_size=4, **GEN, **gen)
    assert seen == [len(LEAD)]
    assert batched == reference
    assert len({len(r) for r in batched}) > 1 and kept  # rows stopped apart and left the batch
