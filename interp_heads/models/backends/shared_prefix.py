"""A KV cache whose rows start from a shared prompt prefix that is read in place, never copied.

A sweep's masked conditions start from one unmasked prompt prefix per batch
(``generation.prefix``); a packed batch holds each prompt once per condition (``copies``,
copy-major). :class:`~interp_heads.models.backends.static_kv.StaticCache.copy_of` copies the
prefix into each batch's own buffers, once per copy, and every decode step then reads every
row's copy: at the Cognitive Mirrors study's ~450 positions, 48 rows and 2 CPU cores, reading the
keys and values is most of attention's time, and the copy itself is a tenth of a condition.

:class:`SharedPrefixCache` keeps the prefix where it is and gives each row its own buffers for
the positions after it (the *tail*: at most the answer budget). Attention over a row's positions
is then two parts, merged by their log-sum-exp (the fused path,
``generation.fast_attention``): the prefix part, with the queries of all copies of a prompt in
one product against that prompt's keys (each prefix key is read once per step, not once per
copy), and the tail part. Rows that stop leave the tail buffers only (:meth:`keep`); their slot
in the prefix's copy grid stays empty. A layer that takes TransformerLens' own path gets every
row's keys and values as one tensor (:meth:`SharedPrefixEntry.append` assembles them), so hooks
on the pattern or the scores work as before, only slower.
"""

from __future__ import annotations

import torch

from interp_heads.models.backends.static_kv import StaticCache, StaticEntry
from interp_heads.models.tl_compat import HookedTransformerKeyValueCacheEntry


class PrefixGrid:
    """What every layer of one cache shares: the prefix's mask (``seen``, ``[prompts,
    prefix_length]``), its ``copies``, and which slot of the copy grid (``copies`` x
    ``prompts``, copy-major) each row of the batch holds. ``whole``: every slot holds its row,
    in order (no row has left). ``dense``: the mask of every position after the prefix is 1 so
    far (the cache sets it each step; the fused path needs it). ``empty``: prompts with no
    unmasked prefix position (None: none)."""

    def __init__(self, seen: torch.Tensor, copies: int):
        self.seen, self.prompts, self.copies = seen, seen.shape[0], copies
        self.slots = torch.arange(self.prompts * copies, device=seen.device)
        self.whole = self.dense = True
        empty = ~seen.any(dim=1)
        self.empty = empty if bool(empty.any()) else None
        self._bias: dict[torch.dtype, torch.Tensor] = {}

    def keep(self, rows: torch.Tensor) -> None:
        self.slots = self.slots[rows]
        self.whole = len(self.slots) == self.prompts * self.copies

    @property
    def prompt_of_row(self) -> torch.Tensor:
        return self.slots % self.prompts

    def bias(self, dtype: torch.dtype) -> torch.Tensor:
        """The prefix's mask as an additive bias ``[prompts, 1, 1, prefix_length]``: 0 or -inf."""
        if dtype not in self._bias:
            bias = torch.zeros(self.seen.shape, dtype=dtype, device=self.seen.device)
            self._bias[dtype] = bias.masked_fill_(~self.seen, float("-inf"))[:, None, None, :]
        return self._bias[dtype]


class KeysShape:
    """What TransformerLens reads of an entry's ``past_keys`` (``shape``, ``size``) when a row's
    keys are not one tensor; anything else is an error rather than a silent copy."""

    def __init__(self, shape):
        self.shape = torch.Size(shape)

    def size(self, dim: int | None = None):
        return self.shape if dim is None else self.shape[dim]

    def __getattr__(self, name):
        raise AttributeError(
            f"a shared-prefix cache entry's past keys are not one tensor (no {name!r}); "
            "SharedPrefixEntry.append returns them whole"
        )


class SharedPrefixEntry(HookedTransformerKeyValueCacheEntry):
    """One layer: the prefix's entry, read in place, and this batch's ``tail`` (a
    :class:`StaticEntry` of the positions after the prefix, one row per batch row)."""

    def __init__(self, prefix: StaticEntry, tail: StaticEntry, grid: PrefixGrid):
        self.prefix, self.tail, self.grid = prefix, tail, grid
        self.frozen = False

    @property
    def prefix_length(self) -> int:
        return self.prefix.length

    @property
    def length(self) -> int:
        return self.prefix.length + self.tail.length

    @property
    def past_keys(self) -> KeysShape:
        t = self.tail.keys
        return KeysShape((self.tail.batch, self.length, t.shape[1], t.shape[3]))

    past_values = past_keys

    def prefix_part(self, rotated: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """The prefix's keys (``rotated``: the rotated keys) and values, head-major, one row a
        prompt: ``[prompts, kv_head, prefix_length, d_head]``."""
        p, n = self.prefix, self.prefix.length
        keys = p.rotated if rotated else p.keys
        return keys[: p.batch, :, :n], p.values[: p.batch, :, :n]

    def append(self, new_keys: torch.Tensor, new_values: torch.Tensor):
        """Write the new positions to the tail; return every position's keys and values of each
        row, ``[batch, position, kv_head, d_head]`` (assembled: TransformerLens' own path)."""
        keys, values = self.tail.append(new_keys, new_values)
        at, n = self.grid.prompt_of_row, self.prefix.length
        whole_keys = torch.cat([self.prefix.keys[at, :, :n], keys.transpose(1, 2)], dim=2)
        whole_values = torch.cat([self.prefix.values[at, :, :n], values.transpose(1, 2)], dim=2)
        return whole_keys.transpose(1, 2), whole_values.transpose(1, 2)

    @property
    def device(self) -> torch.device:
        return self.tail.device

    def keep(self, rows: torch.Tensor) -> None:
        self.tail.keep(rows)


class SharedPrefixCache(StaticCache):
    """Every layer's :class:`SharedPrefixEntry` over ``prefix`` (a :class:`StaticCache`, read,
    never written) for ``copies`` copies of its rows, with tails for ``capacity`` positions in
    all; the attention mask of every position is kept per row, as :class:`StaticCache` does."""

    def __init__(self, prefix: StaticCache, capacity: int, copies: int = 1):
        n, p = prefix.length, prefix.batch
        self.grid = PrefixGrid(prefix.previous_attention_mask.bool(), copies)
        tail = max(1, capacity - n)
        entries = [
            SharedPrefixEntry(e, _tail_like(e, p * copies, tail), self.grid) for e in prefix.entries
        ]
        mask = prefix.mask.new_zeros((p * copies, n + tail))
        mask[:, :n] = prefix.previous_attention_mask.repeat(copies, 1)
        self.entries, self.mask = entries, mask  # as StaticCache holds them
        self.batch, self.length, self.frozen = mask.shape[0], n, False
        self._view()

    def append_attention_mask(self, attention_mask: torch.Tensor) -> torch.Tensor:
        self.grid.dense = self.grid.dense and bool(attention_mask.all())
        return super().append_attention_mask(attention_mask)

    def keep(self, rows: torch.Tensor) -> None:
        super().keep(rows)
        self.grid.keep(rows.to(self.grid.slots.device))

    def copy_of(self, capacity: int, copies: int = 1):
        raise NotImplementedError("a shared-prefix cache is not a prefix to start from")

    @staticmethod
    def fits(prefix: StaticCache, rotary: bool) -> bool:
        """Whether ``prefix`` can be read in place: it holds the rotated keys of all its
        positions in every layer where the model rotates keys (the fused path writes them)."""
        return not rotary or all(e.has_rotated(prefix.length) for e in prefix.entries)


def _tail_like(entry: StaticEntry, batch: int, capacity: int) -> StaticEntry:
    """An empty :class:`StaticEntry` of ``batch`` rows and ``capacity`` positions, with the
    kv heads, head size, dtype and device of ``entry``."""
    shape = (batch, entry.keys.shape[1], capacity, entry.keys.shape[3])
    return StaticEntry(entry.keys.new_empty(shape), entry.values.new_empty(shape))
