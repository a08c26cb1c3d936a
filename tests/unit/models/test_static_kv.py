"""The preallocated KV cache writes in place, keeps grouped-query K/V un-repeated, grows when
too small, drops rows and copies a prefix without writing it."""

from __future__ import annotations

import pytest
import torch

from interp_heads.models.tl_compat import HAS_HOOKED

pytestmark = pytest.mark.skipif(not HAS_HOOKED, reason="the hooked backend's cache")


def _cache(tiny, batch=3, capacity=8):
    from interp_heads.models.backends.static_kv import StaticCache

    return StaticCache.empty(tiny.cfg, "cpu", batch, capacity)


def _kv(tiny, batch, n, seed=0):
    g = torch.Generator().manual_seed(seed)
    shape = (batch, n, tiny.cfg.n_key_value_heads, tiny.cfg.d_head)
    return torch.randn(shape, generator=g), torch.randn(shape, generator=g)


def test_append_writes_into_the_buffer_and_returns_views_of_it(tiny):
    entry = _cache(tiny).entries[0]
    buffer = entry.keys.data_ptr()
    k1, v1 = _kv(tiny, 3, 5, seed=1)
    k2, v2 = _kv(tiny, 3, 1, seed=2)
    entry.append(k1, v1)
    keys, values = entry.append(k2, v2)
    assert entry.keys.data_ptr() == buffer and keys.data_ptr() == buffer
    assert keys.shape == (3, 6, tiny.cfg.n_key_value_heads, tiny.cfg.d_head)  # not repeated
    assert tiny.cfg.n_key_value_heads < tiny.cfg.n_heads
    torch.testing.assert_close(keys, torch.cat([k1, k2], dim=1), rtol=0, atol=0)
    torch.testing.assert_close(values, torch.cat([v1, v2], dim=1), rtol=0, atol=0)
    assert entry.past_keys.shape[1] == 6 and entry.past_keys.data_ptr() == buffer


def test_a_cache_outgrowing_its_buffers_keeps_what_it_holds(tiny):
    entry = _cache(tiny, capacity=4).entries[0]
    k1, v1 = _kv(tiny, 3, 3, seed=1)
    k2, v2 = _kv(tiny, 3, 3, seed=2)
    entry.append(k1, v1)
    keys, values = entry.append(k2, v2)
    assert entry.capacity >= 6
    torch.testing.assert_close(keys, torch.cat([k1, k2], dim=1), rtol=0, atol=0)
    torch.testing.assert_close(values, torch.cat([v1, v2], dim=1), rtol=0, atol=0)


def test_keep_moves_the_kept_rows_to_the_front(tiny):
    cache = _cache(tiny, batch=4)
    k, v = _kv(tiny, 4, 3)
    mask = torch.tensor([[0, 1, 1], [1, 1, 1], [0, 0, 1], [1, 1, 1]])
    cache.append_attention_mask(mask)
    for entry in cache.entries:
        entry.append(k, v)
    cache.keep(torch.tensor([1, 2]))
    assert torch.equal(cache.previous_attention_mask, mask[[1, 2]])
    for entry in cache.entries:
        assert torch.equal(entry.past_keys, k[[1, 2]])
        assert torch.equal(entry.past_values, v[[1, 2]])


def test_a_copy_has_its_own_buffers_and_leaves_the_original_unwritten(tiny):
    prefix = _cache(tiny, capacity=3)
    k, v = _kv(tiny, 3, 3)
    prefix.append_attention_mask(torch.ones((3, 3), dtype=torch.long))
    for entry in prefix.entries:
        entry.append(k, v)
    before = [(e.keys.clone(), e.values.clone()) for e in prefix.entries]
    copy = prefix.copy_of(10)
    k2, v2 = _kv(tiny, 3, 2, seed=3)
    for entry in copy.entries:
        keys, _ = entry.append(k2, v2)
        assert torch.equal(keys, torch.cat([k, k2], dim=1))
    copy.keep(torch.tensor([2]))
    for entry, (keys, values) in zip(prefix.entries, before, strict=True):
        assert torch.equal(entry.keys, keys) and torch.equal(entry.values, values)
    assert prefix.previous_attention_mask.shape == (3, 3)


def test_a_copy_of_several_copies_holds_every_row_once_per_copy_copy_major(tiny):
    prefix = _cache(tiny, capacity=3)
    k, v = _kv(tiny, 3, 3)
    mask = torch.tensor([[0, 1, 1], [1, 1, 1], [0, 0, 1]])
    prefix.append_attention_mask(mask)
    for entry in prefix.entries:
        entry.append(k, v)
        entry.write_rotated(0, k.transpose(1, 2) * 2)  # the fused path's rotated keys
    copy = prefix.copy_of(10, copies=4)
    assert copy.batch == 12 and copy.length == 3
    assert torch.equal(copy.previous_attention_mask, torch.cat([mask] * 4))
    for entry in copy.entries:
        assert entry.capacity == 10
        assert torch.equal(entry.past_keys, torch.cat([k] * 4))
        assert torch.equal(entry.past_values, torch.cat([v] * 4))
        assert entry.has_rotated(3)
        assert torch.equal(entry.rotated[:, :, :3], torch.cat([k.transpose(1, 2) * 2] * 4))
