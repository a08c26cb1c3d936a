"""A fused attention path for generation: ``z`` from ``scaled_dot_product_attention``, hooks intact.

TransformerLens' attention builds explicit score and pattern tensors ``[batch, head, query, key]``
so that ``hook_attn_scores`` and ``hook_pattern`` can see them; during generation nothing reads
them, and that costs 2-2.6x Hugging Face's fused attention on a GPU. Inside
:func:`fast_attention` each attention layer computes ``z`` with PyTorch's
``scaled_dot_product_attention`` instead (same causal and padding mask, same rotary positions,
same scale), and ``hook_q``, ``hook_k``, ``hook_v``, ``hook_rot_q``, ``hook_rot_k`` and ``hook_z``
still fire with the tensors TransformerLens would give them, so head masks on ``hook_z`` work
unchanged. With a KV cache, rotated keys of past positions are kept next to the cache entry and
only the new keys are rotated (rotation is element-wise, so the values are identical); with the
hooked backend's preallocated cache (``models.backends.static_kv``) they are written in place.
Grouped-query keys and values are never repeated per query head (TransformerLens' own path
repeats them on every call, in ``GroupedQueryAttention.calculate_attention_scores`` and
``calculate_z_scores``): the query heads sharing a key/value head are folded into one axis.

A layer takes TransformerLens' own path, call by call, whenever something needs what the fused
kernel does not produce: a hook on ``hook_attn_scores`` or ``hook_pattern``, ALiBi or relative
position bias, attention-score soft capping, ``use_attn_result``, 4-bit weights, a model split over
several devices, an additive mask.
In fp32 the logits equal the standard path within 1e-4 (SmolLM2; 2e-6 on the tiny model); in
fp16/bf16 the fused kernel keeps the scores in the model dtype (TransformerLens upcasts them to
fp32), so results are close, not equal.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
import torch.nn.functional as F

from interp_heads.models.tl_compat import AbstractAttention, HookedTransformer


def _hooked(hp) -> bool:
    return bool(
        hp._forward_hooks or hp._forward_pre_hooks or hp._backward_hooks or hp._backward_pre_hooks
    )


def supports_fast_path(attn: AbstractAttention) -> bool:
    """Whether a layer's configuration can use the fused path at all (hooks aside)."""
    cfg = attn.cfg
    return (
        cfg.positional_embedding_type not in ("alibi", "relative_positional_bias")
        and cfg.attention_dir == "causal"
        and not cfg.attn_scores_soft_cap > 0
        and not cfg.use_attn_result
        and not cfg.load_in_4bit
        and cfg.n_devices == 1
    )


def _fast_forward(
    self: AbstractAttention,
    query_input,
    key_input,
    value_input,
    past_kv_cache_entry=None,
    additive_attention_mask=None,
    attention_mask=None,
    position_bias=None,
):
    if (
        additive_attention_mask is not None
        or position_bias is not None
        or _hooked(self.hook_attn_scores)
        or _hooked(self.hook_pattern)
    ):
        return type(self).forward(
            self,
            query_input,
            key_input,
            value_input,
            past_kv_cache_entry,
            additive_attention_mask,
            attention_mask,
            position_bias,
        )
    cfg = self.cfg
    q, k, v = self.calculate_qkv_matrices(query_input, key_input, value_input)
    entry = past_kv_cache_entry
    offset = 0
    if entry is not None:
        offset = entry.past_keys.size(1)
        k_new = k
        k, v = entry.append(k, v)
    if cfg.positional_embedding_type == "rotary":
        q = self.hook_rot_q(self.apply_rotary(q, offset, attention_mask))
        k = self.hook_rot_k(
            _rotated_keys(
                self, entry, k, k_new if entry is not None else None, offset, attention_mask
            )
        )
    q_len, k_len = q.shape[1], k.shape[1]
    if k_len > self.mask.shape[0]:
        self._extend_mask(k_len)
    allowed = self.mask[None, None, -q_len:, -k_len:]  # causal (or local) band, as TransformerLens
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :].bool()
    z = _attend(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), allowed, self.attn_scale)
    if q_len > 1 and attention_mask is not None:
        # query rows that see only padding: TransformerLens gives 0 there, some kernels NaN
        z = torch.nan_to_num(z, nan=0.0)
    z = self.hook_z(z.transpose(1, 2).to(cfg.dtype))  # [batch pos head_index d_head]
    w = self.W_O.permute(2, 0, 1).reshape(cfg.d_model, -1)  # d_model (head_index d_head), as TL
    return F.linear(z.reshape(z.shape[0], z.shape[1], cfg.d_head * cfg.n_heads), w, self.b_O)


def _attend(qh, kh, vh, allowed, attn_scale):
    """``z`` ``[batch, head, query, d_head]`` by fused attention. Grouped-query keys and values
    are not repeated: the query heads of one key/value head are folded into its query axis
    (query head ``h`` reads key/value head ``h // rep``, as TransformerLens' repeat gives)."""
    batch, n_q, q_len, d_head = qh.shape
    rep = n_q // kh.shape[1]
    if rep > 1:
        qh = qh.reshape(batch, kh.shape[1], rep * q_len, d_head)
        allowed = allowed[:, :, None].expand(allowed.shape[0], 1, rep, q_len, allowed.shape[-1])
        allowed = allowed.reshape(allowed.shape[0], 1, rep * q_len, allowed.shape[-1])
    z = F.scaled_dot_product_attention(
        qh, kh.to(qh.dtype), vh.to(qh.dtype), attn_mask=allowed, scale=1.0 / attn_scale
    )
    return z.reshape(batch, n_q, q_len, d_head)


def _rotated_keys(self, entry, k, k_new, offset, attention_mask):
    """Rotated keys of all positions, ``[batch, pos, kv_head, d_head]``; only the new ones are
    rotated when the past ones are kept (a preallocated entry's buffer, or a side tensor)."""
    if hasattr(entry, "write_rotated") and not entry.frozen and not _hooked(self.hook_rot_k):
        if attention_mask is not None and entry.has_rotated(offset):
            new = self.apply_rotary(k_new, offset, attention_mask)
            return entry.write_rotated(offset, new.transpose(1, 2)).transpose(1, 2)
        rotated = self.apply_rotary(k, 0, attention_mask)
        return entry.write_rotated(0, rotated.transpose(1, 2)).transpose(1, 2)
    return _side_rotated_keys(self, entry, k, k_new, offset, attention_mask)


def _side_rotated_keys(self, entry, k, k_new, offset, attention_mask):
    """Rotated keys of all positions; past ones from the side cache when it is current."""
    past = getattr(entry, "_interp_heads_rot_k", None) if entry is not None else None
    usable = (
        entry is not None
        and not entry.frozen
        and not _hooked(self.hook_rot_k)
        and attention_mask is not None
        and past is not None
        and past.shape[1] == offset
        and past.shape[0] == k.shape[0]
    )
    if usable:
        rotated = torch.cat([past, self.apply_rotary(k_new, offset, attention_mask)], dim=1)
    else:
        rotated = self.apply_rotary(k, 0, attention_mask)
    if entry is not None and not entry.frozen:
        entry._interp_heads_rot_k = rotated
    return rotated


@contextmanager
def fast_attention(model: HookedTransformer, enabled: bool = True) -> Iterator[int]:
    """Use the fused attention path in every supported layer inside the block.

    Args:
        model: the model; its attention modules get their own ``forward`` back on exit.
        enabled: False makes this a no-op (so callers can pass a flag through).

    Yields:
        The number of layers switched to the fused path.
    """
    patched = []
    if enabled:
        for block in model.blocks:
            attn = block.attn
            if (
                isinstance(attn, AbstractAttention)
                and supports_fast_path(attn)
                and "forward" not in vars(attn)
            ):
                attn.forward = _fast_forward.__get__(attn)
                patched.append(attn)
    try:
        yield len(patched)
    finally:
        for attn in patched:
            del attn.forward
