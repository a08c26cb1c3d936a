"""Batched greedy generation with a KV cache, hooks active on every step.

TransformerLens' ``HookedTransformer.generate`` re-runs hooks awkwardly and is slow; here prompts
are sorted by length, left-padded into batches, run once through the model to fill a
``HookedTransformerKeyValueCache``, then extended one token at a time. Hooks passed as
``fwd_hooks`` (or added by a context manager such as ``interp_heads.ablation.mask_heads``) fire on
the prompt pass and on every generated token, so a head mask holds for the whole answer.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformer_lens import HookedTransformer
from transformer_lens.past_key_value_caching import HookedTransformerKeyValueCache


def stop_token_ids(model: HookedTransformer) -> set[int]:
    """Token ids that end an answer: EOS, ``<|im_end|>`` and ``<|endoftext|>`` when present."""
    tok = model.tokenizer
    ids = {tok.eos_token_id} if tok.eos_token_id is not None else set()
    vocab = tok.get_vocab()
    for name in ("<|im_end|>", "<|endoftext|>", "<|eot_id|>"):
        if name in vocab:
            ids.add(vocab[name])
    return ids


def tokenize_left_padded(
    model: HookedTransformer, prompts: Sequence[str], prepend_bos: bool | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Tokens ``[batch, pos]`` and attention mask, left-padded, as TransformerLens would tokenize."""
    if prepend_bos is None:
        prepend_bos = model.cfg.default_prepend_bos
    rows = [model.to_tokens(p, prepend_bos=prepend_bos, move_to_device=False)[0] for p in prompts]
    width = max(len(r) for r in rows)
    pad = model.tokenizer.pad_token_id
    tokens = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        tokens[i, width - len(r) :] = r
        mask[i, width - len(r) :] = 1
    return tokens, mask


@torch.inference_mode()
def generate_tokens(
    model: HookedTransformer,
    prompts: Sequence[str],
    max_new_tokens: int = 10,
    *,
    batch_size: int = 32,
    fwd_hooks: Sequence = (),
    use_cache: bool = True,
    stop_at_eos: bool = True,
    prepend_bos: bool | None = None,
) -> list[list[int]]:
    """Greedy continuations (token ids, stop token excluded) for each prompt, in input order."""
    if max_new_tokens < 1:
        raise ValueError("max_new_tokens must be at least 1")
    stops = stop_token_ids(model) if stop_at_eos else set()
    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
    out: list[list[int] | None] = [None] * len(prompts)
    device = model.cfg.device
    with model.hooks(fwd_hooks=list(fwd_hooks)):
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            tokens, mask = tokenize_left_padded(model, [prompts[i] for i in idx], prepend_bos)
            rows = _greedy(model, tokens.to(device), mask.to(device), max_new_tokens, stops, use_cache)
            for i, row in zip(idx, rows, strict=True):
                out[i] = row
    return out  # type: ignore[return-value]


def last_logits(model: HookedTransformer, tokens, attention_mask, past_kv_cache=None) -> torch.Tensor:
    """Logits ``[batch, d_vocab]`` at the last position only.

    Unembedding every prompt position costs about a fifth of a SmolLM2 forward pass (49k-token
    vocabulary); Hugging Face's ``generate`` skips it too. Hooks on ``ln_final`` and ``unembed``
    still fire.
    """
    resid = model(
        tokens, attention_mask=attention_mask, past_kv_cache=past_kv_cache, stop_at_layer=model.cfg.n_layers
    )[:, -1:]
    if model.cfg.normalization_type is not None:
        resid = model.ln_final(resid)
    return model.unembed(resid)[:, -1]


def _greedy(model, tokens, mask, max_new_tokens, stops, use_cache) -> list[list[int]]:
    batch = tokens.shape[0]
    cache = HookedTransformerKeyValueCache.init_cache(model.cfg, model.cfg.device, batch) if use_cache else None
    generated = torch.empty((batch, 0), dtype=torch.long, device=tokens.device)
    done = torch.zeros(batch, dtype=torch.bool, device=tokens.device)
    stop_tensor = torch.tensor(sorted(stops), dtype=torch.long, device=tokens.device)
    step_input, step_mask = tokens, mask
    full_tokens, full_mask = tokens, mask
    pad = model.tokenizer.pad_token_id
    for _ in range(max_new_tokens):
        if use_cache:
            logits = last_logits(model, step_input, step_mask, cache)
        else:
            logits = last_logits(model, full_tokens, full_mask)
        nxt = logits.argmax(dim=-1)
        nxt = torch.where(done, torch.full_like(nxt, pad), nxt)
        generated = torch.cat([generated, nxt[:, None]], dim=1)
        if len(stop_tensor):
            done = done | torch.isin(nxt, stop_tensor)
        if bool(done.all()):
            break
        step_input = nxt[:, None]
        step_mask = torch.ones((batch, 1), dtype=mask.dtype, device=mask.device)
        full_tokens = torch.cat([full_tokens, step_input], dim=1)
        full_mask = torch.cat([full_mask, step_mask], dim=1)
    rows = []
    for row in generated.tolist():
        cut = next((j for j, t in enumerate(row) if t in stops), len(row))
        rows.append(row[:cut])
    return rows


def generate(
    model: HookedTransformer,
    prompts: Sequence[str],
    max_new_tokens: int = 10,
    **kwargs,
) -> list[str]:
    """Greedy continuations as text (special tokens dropped), one per prompt, in input order.

    Keyword arguments are those of :func:`generate_tokens` (``batch_size``, ``fwd_hooks``,
    ``use_cache``, ``stop_at_eos``, ``prepend_bos``).
    """
    rows = generate_tokens(model, prompts, max_new_tokens, **kwargs)
    return [model.tokenizer.decode(r, skip_special_tokens=True) for r in rows]
