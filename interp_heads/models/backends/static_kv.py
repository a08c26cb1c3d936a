"""A preallocated KV cache for TransformerLens 2.18, written in place (the ``hooked`` backend).

TransformerLens' ``HookedTransformerKeyValueCacheEntry.append`` concatenates the whole cache with
the new keys and values on every step, so a decode step copies every cached position of every
layer. :class:`StaticEntry` holds one buffer per layer for K and for V, sized to the batch's
prompt plus its answer budget, writes the new positions in place and hands attention views up to
the current length; grouped-query keys and values are stored un-repeated (``n_key_value_heads``).
The buffers are head-major (``[batch, kv_head, position, d_head]``), so one head's keys are one
contiguous run for the attention kernel; ``past_keys`` and ``past_values`` are the
``[batch, position, kv_head, d_head]`` views TransformerLens reads.

Rows can leave the batch (:meth:`StaticCache.keep`): the kept rows are moved to the front of each
buffer once, and later steps run on those rows only. A cache that outgrows its buffers doubles
them (a copy, rare: only when the capacity asked for was too small). Caches of several batches
of left-padded rows stack into one wider batch (:func:`stacked`): each row's positions keep
their place from the right, and the columns added on the left are padding (mask 0, zeros), so
every later step reads what it would have read in the row's own batch (TransformerLens counts
positions from the attention mask, not from the buffer column).
"""

from __future__ import annotations

import torch

from interp_heads.models.tl_compat import (
    HookedTransformerKeyValueCache,
    HookedTransformerKeyValueCacheEntry,
)


class StaticEntry(HookedTransformerKeyValueCacheEntry):
    """One layer's keys and values in preallocated buffers; ``append`` writes in place.

    ``has_rotated``/``write_rotated`` keep the fused attention path's rotated keys in a third
    buffer of the same shape (``interp_heads.generation.fast_attention``), made on first use.
    """

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, length: int = 0):
        self.keys, self.values = keys, values  # [batch kv_head capacity d_head]
        self.batch, self.length = keys.shape[0], length
        self.frozen = False
        self.rotated: torch.Tensor | None = None
        self.rotated_length = 0
        self._views()

    @classmethod
    def empty(cls, cfg, device, batch: int, capacity: int) -> StaticEntry:
        heads = cfg.n_key_value_heads or cfg.n_heads
        shape = (batch, heads, capacity, cfg.d_head)
        return cls(
            torch.empty(shape, dtype=cfg.dtype, device=device),
            torch.empty(shape, dtype=cfg.dtype, device=device),
        )

    @property
    def device(self) -> torch.device:
        return self.keys.device

    @property
    def capacity(self) -> int:
        return self.keys.shape[2]

    def _views(self) -> None:
        self.past_keys = self.keys[: self.batch, :, : self.length].transpose(1, 2)
        self.past_values = self.values[: self.batch, :, : self.length].transpose(1, 2)

    def _reserve(self, end: int) -> None:
        """Buffers of at least ``end`` positions (doubled, contents kept, when too small)."""
        if end <= self.capacity:
            return
        size = max(end, 2 * self.capacity)
        for name in ("keys", "values", "rotated"):
            old = getattr(self, name)
            if old is None:
                continue
            new = old.new_empty((old.shape[0], old.shape[1], size, old.shape[3]))
            new[:, :, : old.shape[2]] = old
            setattr(self, name, new)

    def append(self, new_keys: torch.Tensor, new_values: torch.Tensor):
        """Write ``[batch, new, kv_head, d_head]`` keys and values after the cached ones; return
        views of all positions (the length stays when frozen: the next write overwrites)."""
        end = self.length + new_keys.shape[1]
        self._reserve(end)
        b = self.batch
        self.keys[:b, :, self.length : end] = new_keys.transpose(1, 2)
        self.values[:b, :, self.length : end] = new_values.transpose(1, 2)
        if not self.frozen:
            self.length = end
            self._views()
        return (
            self.keys[:b, :, :end].transpose(1, 2),
            self.values[:b, :, :end].transpose(1, 2),
        )

    def has_rotated(self, upto: int) -> bool:
        """Whether the rotated keys of the first ``upto`` positions are written."""
        return self.rotated is not None and self.rotated_length == upto

    def write_rotated(self, start: int, rotated: torch.Tensor) -> torch.Tensor:
        """Write rotated keys (head-major ``[batch, kv_head, new, d_head]``) from ``start``;
        return the rotated keys of every position so far, head-major."""
        end = start + rotated.shape[2]
        if self.rotated is None:
            self.rotated = torch.empty_like(self.keys)
        self._reserve(end)
        self.rotated[: self.batch, :, start:end] = rotated
        if not self.frozen:
            self.rotated_length = end
        return self.rotated[: self.batch, :, :end]

    def keep(self, rows: torch.Tensor) -> None:
        """Keep only ``rows`` (ascending indices of the current batch), moved to the front."""
        for name, n in (("keys", self.length), ("values", self.length)):
            buf = getattr(self, name)
            buf[: len(rows), :, :n] = buf[rows, :, :n]
        if self.rotated is not None:
            n = self.rotated_length
            self.rotated[: len(rows), :, :n] = self.rotated[rows, :, :n]
        self.batch = len(rows)
        self._views()

    def copy_of(self, capacity: int, copies: int = 1) -> StaticEntry:
        """A new entry with its own buffers of ``capacity`` positions, holding this one's rows
        ``copies`` times over (copy-major: rows ``0..b-1`` of the first copy, then the next)."""
        b, n = self.batch, self.length
        shape = (b * copies, self.keys.shape[1], max(capacity, n), self.keys.shape[3])
        entry = StaticEntry(self.keys.new_empty(shape), self.values.new_empty(shape), n)
        _fill(entry.keys, self.keys[:b, :, :n], copies)
        _fill(entry.values, self.values[:b, :, :n], copies)
        if self.has_rotated(n):
            entry.rotated = self.keys.new_empty(shape)
            _fill(entry.rotated, self.rotated[:b, :, :n], copies)
            entry.rotated_length = n
        return entry


def _fill(buffer: torch.Tensor, rows: torch.Tensor, copies: int) -> None:
    """Write ``rows`` (``[b, head, n, d]``) ``copies`` times, copy-major, into the first ``n``
    positions of ``buffer`` (``[copies * b, head, capacity, d]``), with no temporary copy."""
    buffer[:, :, : rows.shape[2]].unflatten(0, (copies, rows.shape[0]))[:] = rows


class StaticCache(HookedTransformerKeyValueCache):
    """Every layer's :class:`StaticEntry` and the attention mask so far, in a buffer too."""

    def __init__(self, entries: list[StaticEntry], mask: torch.Tensor, length: int = 0):
        self.entries, self.mask = entries, mask  # mask: [batch capacity], long
        self.batch, self.length = mask.shape[0], length
        self.frozen = False
        self._view()

    @classmethod
    def empty(cls, cfg, device, batch: int, capacity: int) -> StaticCache:
        from transformer_lens.utilities.devices import get_device_for_block_index

        entries = [
            StaticEntry.empty(cfg, get_device_for_block_index(i, cfg, device), batch, capacity)
            for i in range(cfg.n_layers)
        ]
        return cls(entries, torch.zeros((batch, capacity), dtype=torch.long, device=device))

    def _view(self) -> None:
        self.previous_attention_mask = self.mask[: self.batch, : self.length]

    def append_attention_mask(self, attention_mask: torch.Tensor) -> torch.Tensor:
        end = self.length + attention_mask.shape[1]
        if end > self.mask.shape[1]:
            grown = self.mask.new_zeros((self.mask.shape[0], max(end, 2 * self.mask.shape[1])))
            grown[:, : self.length] = self.mask[:, : self.length]
            self.mask = grown
        self.mask[: self.batch, self.length : end] = attention_mask.to(self.mask.device)
        if not self.frozen:
            self.length = end
            self._view()
        return self.mask[: self.batch, :end]

    def keep(self, rows: torch.Tensor) -> None:
        """Keep only ``rows`` of the batch (ascending indices), in every layer."""
        rows = rows.to(self.mask.device)
        self.mask[: len(rows), : self.length] = self.mask[rows, : self.length]
        for entry in self.entries:
            entry.keep(rows.to(entry.device))
        self.batch = len(rows)
        self._view()

    def copy_of(self, capacity: int, copies: int = 1) -> StaticCache:
        """A cache with its own buffers of ``capacity`` positions, starting where this one ends
        (this one is read, never written); ``copies``: each row that many times, copy-major (the
        conditions of a packed batch over one prompt prefix)."""
        mask = self.mask.new_zeros((self.batch * copies, max(capacity, self.length)))
        mask[:, : self.length] = self.previous_attention_mask.repeat(copies, 1)
        entries = [e.copy_of(capacity, copies) for e in self.entries]
        return StaticCache(entries, mask, self.length)


def stacked(parts, batch: int, width: int) -> StaticCache:
    """One cache of ``batch`` rows and ``width`` positions from caches of some of its rows:
    ``parts`` is ``(rows, cache)`` pairs, ``rows`` the batch rows (a LongTensor) that cache's
    rows become, each cache at most ``width`` long. Every row is right-aligned (the batches are
    left-padded); the columns left of a part's own are padding: mask 0, keys and values 0 (never
    attended, and finite, so a masked score times them is 0). Rotated keys are stacked when
    every part holds them for all its positions."""
    first = parts[0][1]
    entries = []
    for layer, e in enumerate(first.entries):
        shape = (batch, e.keys.shape[1], width, e.keys.shape[3])
        entry = StaticEntry(e.keys.new_zeros(shape), e.values.new_zeros(shape), width)
        rotated = all(c.entries[layer].has_rotated(c.length) for _, c in parts)
        if rotated:
            entry.rotated = e.keys.new_zeros(shape)
            entry.rotated_length = width
        for rows, cache in parts:
            part, n = cache.entries[layer], cache.length
            at, b = rows.to(entry.keys.device), part.batch
            entry.keys[at, :, width - n :] = part.keys[:b, :, :n]
            entry.values[at, :, width - n :] = part.values[:b, :, :n]
            if rotated:
                entry.rotated[at, :, width - n :] = part.rotated[:b, :, :n]
        entries.append(entry)
    mask = first.mask.new_zeros((batch, width))
    for rows, cache in parts:
        mask[rows.to(mask.device), width - cache.length :] = cache.previous_attention_mask
    return StaticCache(entries, mask, width)
