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
Over a prompt prefix read in place (``models.backends.shared_prefix``) a decode step's attention
is the prefix part, with every copy's queries of a prompt in one product, and the tail part,
merged by their log-sum-exp (:func:`_attend_shared`). On the CPU each layer's W_Q, W_K, W_V and
W_O stay in ``F.linear``'s layout while the path is on (:func:`_flat`), kept in a table beside
the layer (weakly keyed by the module, as ``model_info`` keeps what is known of a model), never
on it: the path's only change to a layer is its ``forward``, given back on exit.

A layer takes TransformerLens' own path, call by call, whenever something needs what the fused
kernel does not produce: a hook on ``hook_attn_scores`` or ``hook_pattern``, ALiBi or relative
position bias, attention-score soft capping, ``use_attn_result``, 4-bit weights, a model split over
several devices, an additive mask.
In fp32 the logits equal the standard path within 1e-4 (SmolLM2; 2e-6 on the tiny model); in
fp16/bf16 the fused kernel keeps the scores in the model dtype (TransformerLens upcasts them to
fp32), so results are close, not equal.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from contextlib import contextmanager

import torch
import torch.nn.functional as F

from interp_heads.models.backends.shared_prefix import SharedPrefixEntry
from interp_heads.models.tl_compat import AbstractAttention, HookedTransformer

# Device types on which the fused path keeps each layer's W_Q, W_K, W_V and W_O in ``F.linear``'s
# layout between calls. TransformerLens lays them out again on every call (an einops rearrange
# that copies them): 8% of a decode step of SmolLM2 at batch 48 on 2 CPU cores. On a GPU that
# copy is cheap and the kept copies would hold a third of a large model's weights again.
FLAT_WEIGHT_DEVICES = {"cpu"}
# Each switched layer's weights in F.linear's layout ({name: (stamps, tensor)}), by the attention
# module, weakly (a module hashes by identity): only while fast_attention is on, never on the layer.
_FLAT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def kept_layouts(attn) -> dict | None:
    """The weights of layer ``attn`` kept in ``F.linear``'s layout, by name (None: none kept)."""
    return _FLAT.get(attn)


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
    q, k, v = _qkv(self, query_input, key_input, value_input)
    entry = past_kv_cache_entry
    if _reads_shared_prefix(self, entry, q):
        return _output(self, _shared_prefix_z(self, q, k, v, entry, attention_mask))
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
    return _output(self, z)


def _output(self, z):
    """The layer's output from ``z`` ``[batch, head, query, d_head]``, through ``hook_z``."""
    cfg = self.cfg
    z = self.hook_z(z.transpose(1, 2).to(cfg.dtype))  # [batch pos head_index d_head]
    w = _flat(self, "O", (self.W_O,), lambda w: w.permute(2, 0, 1).reshape(cfg.d_model, -1))
    return F.linear(z.reshape(z.shape[0], z.shape[1], cfg.d_head * cfg.n_heads), w, self.b_O)


def _reads_shared_prefix(self, entry, q) -> bool:
    """Whether this step attends over a shared prompt prefix in place (one query position, a
    global layer, every position after the prefix unmasked, nothing hooked on the rotated keys);
    otherwise the entry assembles each row's keys and the step goes on as for any cache."""
    return (
        isinstance(entry, SharedPrefixEntry)
        and q.shape[1] == 1
        and entry.grid.dense
        and getattr(self, "attn_type", "global") != "local"
        and not (hasattr(self, "hook_rot_k") and _hooked(self.hook_rot_k))
    )


def _shared_prefix_z(self, q, k, v, entry, attention_mask):
    """``z`` ``[batch, head, 1, d_head]`` of one decode step over a
    :class:`~interp_heads.models.backends.shared_prefix.SharedPrefixEntry`: the new position is
    written to the rows' tails, rotated there as every cached key is, and attention is the
    merge of the prefix part and the tail part (:func:`_attend_shared`)."""
    offset, n = entry.length, entry.prefix_length
    tail_keys, tail_values = entry.tail.append(k, v)  # [batch, pos, kv_head, d_head]
    rotary = self.cfg.positional_embedding_type == "rotary"
    if rotary:
        q = self.hook_rot_q(self.apply_rotary(q, offset, attention_mask))
        tail = entry.tail
        if tail.has_rotated(offset - n):
            new = self.apply_rotary(k, offset, attention_mask)
            tail_keys = tail.write_rotated(offset - n, new.transpose(1, 2))
        else:  # the tail's keys so far, rotated at their positions after the prefix
            every = self.apply_rotary(tail_keys, n, attention_mask)
            tail_keys = tail.write_rotated(0, every.transpose(1, 2))
    else:
        tail_keys = tail_keys.transpose(1, 2)
    return _attend_shared(
        q.transpose(1, 2), entry, tail_keys, tail_values.transpose(1, 2), rotary,
        1.0 / self.attn_scale,
    )  # fmt: skip


def _attend_shared(qh, entry, tail_keys, tail_values, rotated, scale):
    """``z`` of rows that share a prefix: the queries of every copy of a prompt in one product
    against its prefix keys (each read once per step), the tail per row, the two parts merged by
    their log-sum-exp. Grouped-query heads are folded as in :func:`_attend`."""
    grid = entry.grid
    rows, n_q, _, d = qh.shape
    keys, values = entry.prefix_part(rotated)
    prompts, kv = keys.shape[:2]
    rep, copies = n_q // kv, grid.copies
    q = qh.reshape(rows, kv, rep, d)
    every = (
        q
        if grid.whole
        else q.new_zeros((copies * prompts, kv, rep, d)).index_copy_(0, grid.slots, q)
    )
    per_prompt = every.view(copies, prompts, kv, rep, d).permute(1, 2, 0, 3, 4)
    z_p, lse_p = _attend_lse(
        per_prompt.reshape(prompts, kv, copies * rep, d), keys, values, grid.bias(q.dtype), scale
    )
    z_p = z_p.view(prompts, kv, copies, rep, d).permute(2, 0, 1, 3, 4).reshape(-1, kv, rep, d)
    lse_p = lse_p.view(prompts, kv, copies, rep).permute(2, 0, 1, 3).reshape(-1, kv, rep)
    if grid.empty is not None:  # no prefix position to attend: that part weighs nothing
        lse_p = lse_p.masked_fill(grid.empty.repeat(copies)[:, None, None], float("-inf"))
    if not grid.whole:
        z_p, lse_p = z_p[grid.slots], lse_p[grid.slots]
    z_t, lse_t = _attend_lse(q, tail_keys.to(q.dtype), tail_values.to(q.dtype), None, scale)
    top = torch.maximum(lse_p, lse_t)
    w_p, w_t = (lse_p - top).exp(), (lse_t - top).exp()
    z = (z_p * w_p[..., None] + z_t * w_t[..., None]) / (w_p + w_t)[..., None]
    return z.reshape(rows, n_q, 1, d)


_FLASH_CPU = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)


def _attend_lse(q, k, v, bias, scale):
    """``softmax(q k^T * scale + bias) v`` and the log-sum-exp of its scores per query:
    PyTorch's CPU flash-attention kernel (the one ``scaled_dot_product_attention`` runs here), or
    the same by hand elsewhere. A query with every key masked gives 0 (the caller weighs it 0)."""
    if _FLASH_CPU is not None and q.device.type == "cpu":
        return _FLASH_CPU(q, k.to(q.dtype), v.to(q.dtype), attn_mask=bias, scale=scale)
    scores = torch.matmul(q, k.to(q.dtype).transpose(-1, -2)).float() * scale
    if bias is not None:
        scores = scores + bias
    lse = scores.logsumexp(dim=-1)
    z = torch.matmul((scores - lse[..., None]).exp().to(q.dtype), v.to(q.dtype))
    return z.nan_to_num_(0.0), lse


def _qkv(self, query_input, key_input, value_input):
    """``q``, ``k``, ``v`` as ``calculate_qkv_matrices`` gives them (``hook_q``/``k``/``v``, then
    the q/k norm), from the weights in ``F.linear``'s layout kept between steps (:func:`_flat`)
    where that applies: ``[batch, pos, d_model]`` inputs (no split q/k/v input), grouped or plain
    heads as stored."""
    cfg = self.cfg
    if (
        _FLAT.get(self) is None
        or cfg.use_split_qkv_input
        or cfg.use_attn_in
        or (hasattr(self, "_W_K") and cfg.ungroup_grouped_query_attention)
    ):
        return self.calculate_qkv_matrices(query_input, key_input, value_input)
    grouped = "_" if hasattr(self, "_W_K") else ""
    q = self.hook_q(_linear(self, query_input, "Q", self.W_Q, self.b_Q))
    k_w, k_b = getattr(self, f"{grouped}W_K"), getattr(self, f"{grouped}b_K")
    k = self.hook_k(_linear(self, key_input, "K", k_w, k_b))
    v_w, v_b = getattr(self, f"{grouped}W_V"), getattr(self, f"{grouped}b_V")
    v = self.hook_v(_linear(self, value_input, "V", v_w, v_b))
    if cfg.use_qk_norm:
        q = self._apply_qk_norm(q, self.q_norm)
        k = self._apply_qk_norm(k, self.k_norm)
    return q, k, v


def _linear(self, x, name, w, b):
    """TransformerLens' ``simple_attn_linear``: ``[batch, pos, head, d_head]`` from ``w``
    ``[head, d_model, d_head]`` laid out as ``(head d_head) d_model`` (the same contiguous copy
    its einops rearrange makes, so the product is bitwise the same)."""
    w_flat = _flat(self, name, (w,), lambda w: w.permute(0, 2, 1).reshape(-1, w.shape[1]))
    return F.linear(x, w_flat, b.reshape(-1)).reshape(x.shape[0], x.shape[1], *b.shape)


def _flat(self, name, tensors, make):
    """``make(*tensors)``, kept for the layer (:data:`_FLAT`) while :func:`fast_attention` is on
    for a device type of :data:`FLAT_WEIGHT_DEVICES`, until one of ``tensors`` is replaced or
    written in place (its version counter). Elsewhere made on every call, as TransformerLens does."""
    kept = _FLAT.get(self)
    if kept is None:
        return make(*tensors)
    stamp = [(t, t._version) for t in tensors]
    hit = kept.get(name)
    if hit is not None and all(
        a is t and v == n for (a, v), (t, n) in zip(hit[0], stamp, strict=True)
    ):
        return hit[1]
    made = make(*tensors)
    kept[name] = (stamp, made)
    return made


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


def can_fuse(model) -> bool:
    """Whether every attention layer of ``model`` (a HookedTransformer) supports the fused
    path, so that :func:`fast_attention` switches them all."""
    blocks = getattr(model, "blocks", None)
    return bool(blocks) and all(
        isinstance(b.attn, AbstractAttention) and supports_fast_path(b.attn) for b in blocks
    )


def fused_everywhere(model) -> bool:
    """Whether every attention layer of ``model`` runs the fused path now (inside
    :func:`fast_attention`, none switched off by its configuration)."""
    blocks = getattr(model, "blocks", None)
    return bool(blocks) and all(
        getattr(vars(b.attn).get("forward"), "__func__", None) is _fast_forward for b in blocks
    )


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
                if attn.W_Q.device.type in FLAT_WEIGHT_DEVICES:
                    _FLAT[attn] = {}
                patched.append(attn)
    try:
        yield len(patched)
    finally:
        for attn in patched:
            del attn.forward
            _FLAT.pop(attn, None)
