"""Generation with the preallocated KV cache and stopped rows leaving the batch equals
generation with TransformerLens' own concatenating cache, every row kept to the end.

The reference replaces the hooked backend's cache by TransformerLens'
``HookedTransformerKeyValueCache`` (each step ``torch.cat``s the whole cache; it cannot drop rows),
the way generation ran before the preallocated cache.
"""

from __future__ import annotations

import contextlib
from collections import Counter

import pytest
import torch

from interp_heads.execution.packed import PackedJob, generate_packed
from interp_heads.generation.decode import batches, generate_tokens
from interp_heads.generation.kv_cache import KVCache
from interp_heads.generation.prefix import PromptPrefixes
from interp_heads.interventions.masks import mask_heads
from interp_heads.interventions.means import head_means
from interp_heads.models.backends.hooked import HookedBackend
from interp_heads.models.backends.static_kv import StaticCache
from interp_heads.models.tl_compat import (
    HAS_HOOKED,
    HookedTransformerKeyValueCache,
    HookedTransformerKeyValueCacheEntry,
)

pytestmark = pytest.mark.skipif(not HAS_HOOKED, reason="the hooked backend's cache")

PROMPTS = ["a", "say hello there", "xyz", "one two three four five six", "q?", "the cat", "hm"]
HEADS = [(0, 1), (1, 3), (2, 0), (2, 2)]


class _ConcatCache:
    """The cache generation used before: TransformerLens' own, grown by ``torch.cat``."""

    def __init__(self, backend, model, batch, prefix=None, capacity=None):
        self.backend, self.model = backend, model
        if prefix is None:
            self.cache = HookedTransformerKeyValueCache.init_cache(
                model.cfg, model.cfg.device, batch
            )
        else:  # shares the prefix's tensors; append makes new ones
            entries = []
            for old in prefix.entries:
                entry = HookedTransformerKeyValueCacheEntry(old.past_keys, old.past_values)
                entries.append(entry)
            self.cache = HookedTransformerKeyValueCache(entries, prefix.previous_attention_mask)

    def step(self, new_tokens, new_mask, full_mask):
        resid = self.model(
            new_tokens,
            attention_mask=new_mask,
            past_kv_cache=self.cache,
            stop_at_layer=self.model.cfg.n_layers,
        )
        return self.backend.final_logits(self.model, resid)


@pytest.fixture
def concat_cache(monkeypatch):
    """Within the test's ``with concat_cache():`` blocks, generation uses :class:`_ConcatCache`."""

    @contextlib.contextmanager
    def use():
        with monkeypatch.context() as m:
            m.setattr(HookedBackend, "kv_cache", _concat_kv_cache)
            m.setattr(
                HookedBackend,
                "prompt_prefix",
                lambda self, model, t, mk: _prefix_of(_ConcatCache(self, model, t.shape[0]), t, mk),
            )
            yield

    return use


def _concat_kv_cache(self, model, batch, prefix=None, capacity=None, *, shared_prefix=False):
    return _ConcatCache(self, model, batch, prefix)


def _prefix_of(cache, tokens, mask):
    cache.step(tokens, mask, mask)
    return cache.cache


@pytest.fixture
def drops(monkeypatch):
    """How many times rows left a batch (calls of ``StaticCache.keep``)."""
    count = Counter()
    keep = StaticCache.keep

    def counted(self, rows):
        count["keep"] += 1
        return keep(self, rows)

    monkeypatch.setattr(StaticCache, "keep", counted)
    return count


def _stop_text(model) -> str:
    """A token that ends some unmasked answers early and others not (rows stop apart)."""
    rows = generate_tokens(model, PROMPTS, 8, batch_size=4, stop_at_eos=False)
    token, _ = Counter(t for r in rows for t in r[1:5]).most_common(1)[0]
    return model.tokenizer.convert_ids_to_tokens(token)


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize(
    ("positions", "with_prefix"), [("all", False), ("last", False), ("last", True)]
)
def test_generation_equals_the_concatenating_cache_under_masks(
    tiny, concat_cache, drops, fast, positions, with_prefix
):
    stop = _stop_text(tiny)
    means = head_means(tiny, PROMPTS)
    gen = dict(batch_size=4, stop_at_eos=False, stop_after=stop, fast_attention=fast)
    results = []
    for use in (concat_cache, contextlib.nullcontext):
        with use():
            prefixes = PromptPrefixes(tiny, PROMPTS, batch_size=4, fast_attention=fast)
            with mask_heads(tiny, HEADS, "mean", values=means, positions=positions):
                p = prefixes if with_prefix else None
                results.append(generate_tokens(tiny, PROMPTS, 8, prefixes=p, **gen))
            results.append(generate_tokens(tiny, PROMPTS, 8, **gen))  # unmasked
    old_masked, old_plain, new_masked, new_plain = results
    assert new_masked == old_masked
    assert new_plain == old_plain
    assert len({len(r) for r in old_plain}) > 1  # rows stop apart: some left their batch
    assert drops["keep"] > 0


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("with_prefix", [True, False])
def test_step_logits_equal_the_concatenating_cache_after_rows_leave(
    tiny, concat_cache, fast, with_prefix
):
    from interp_heads.generation.decode import attention_path
    from interp_heads.models.backends import backend_of

    _, tokens, mask = next(batches(tiny, PROMPTS, 7, None))  # left-padded
    backend = backend_of(tiny)
    feed = torch.tensor([[5], [17], [3], [250], [9], [41], [77]])
    with torch.inference_mode(), attention_path(tiny, fast):
        with concat_cache():
            pre = backend.prompt_prefix(tiny, tokens[:, :-1], mask[:, :-1]) if with_prefix else None
            old = KVCache(tiny, 7, pre)
            start = (tokens[:, -1:], mask[:, -1:]) if with_prefix else (tokens, mask)
            ref = [old.step(*start, mask)]
            for _ in range(3):
                ref.append(old.step(feed, torch.ones_like(feed), mask))
        pre = backend.prompt_prefix(tiny, tokens[:, :-1], mask[:, :-1]) if with_prefix else None
        new = KVCache(tiny, 7, pre, capacity=tokens.shape[1] + 2)  # too small: it grows
        got = [new.step(*start, mask), new.step(feed, torch.ones_like(feed), mask)]
        rows = torch.tensor([0, 3, 4, 6])
        assert new.keep(rows)
        got += [new.step(feed[rows], torch.ones_like(feed[rows]), mask) for _ in range(2)]
    for step, (a, b) in enumerate(zip(got, ref, strict=True)):
        expected = b if step < 2 else b[rows]
        torch.testing.assert_close(a, expected, rtol=1e-5, atol=1e-5)


def test_packed_generation_equals_the_concatenating_cache(tiny, concat_cache, drops):
    stop = _stop_text(tiny)
    means = head_means(tiny, PROMPTS)
    jobs = [
        PackedJob(PROMPTS, [], means),
        PackedJob(PROMPTS, HEADS, means),
        PackedJob(PROMPTS[:4], [(1, 1), (0, 3)], means),
    ]
    kw = dict(pack_rows=5, stop_at_eos=False, stop_after=stop)
    with concat_cache():
        old = generate_packed(tiny, jobs, "mean", 8, **kw)
    new = generate_packed(tiny, jobs, "mean", 8, **kw)
    assert new == old
    assert drops["keep"] > 0
