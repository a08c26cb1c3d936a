"""A tiny attention-only model whose weights plant one head of each known kind, for detector tests.

The residual stream has four blocks of 32 dimensions: a one-hot position, the token's content (a
random unit-scale vector per token), a "previous token" slot and a "successor" output. Planted heads
(all others attend uniformly and write nothing):

- ``L0H1`` previous-token: its query at position ``i`` matches the key at ``i - 1``; it copies the
  attended token's content into the slot (so layer 1 can compose with it).
- ``L1H0`` induction: its query reads the current content, its key the slot: position ``j`` is
  attended when the token before ``j`` equals the current token (K-composition with ``L0H1``).
- ``L1H1`` duplicate-token: query and key both read the content (same token, same vector).
- ``L1H2`` successor: its OV circuit writes the content into the output block, which the unembedding
  reads as the logit of the token's successor in every ordinal sequence of single tokens.
"""

from __future__ import annotations

import torch

from interp_heads.models import attach_tokenizer
from interp_heads.testing import SPECIALS, byte_tokenizer
from interp_heads.tl_compat import HookedTransformer, HookedTransformerConfig

PLANTED = {
    "previous_token": (0, 1),
    "induction": (1, 0),
    "duplicate_token": (1, 1),
    "successor": (1, 2),
}
_B = 32  # dimensions per block of the residual stream


def planted_model(seed: int = 0, scale: float = 15.0) -> HookedTransformer:
    """The model described in the module docstring (byte-level tokenizer, 32 positions)."""
    from interp_heads.known_heads import ordinal_token_ids

    cfg = HookedTransformerConfig(
        n_layers=2, d_model=4 * _B, n_heads=4, d_head=_B, n_ctx=_B, d_vocab=len(SPECIALS) + 256,
        attn_only=True, normalization_type=None, positional_embedding_type="standard",
        act_fn="relu", default_prepend_bos=False, seed=seed, device="cpu",
    )  # fmt: skip
    torch.manual_seed(seed)
    model = attach_tokenizer(HookedTransformer(cfg).eval(), byte_tokenizer())
    pos, content, slot, succ = (slice(i * _B, (i + 1) * _B) for i in range(4))
    eye = torch.eye(_B)
    content_vecs = torch.randn(cfg.d_vocab, _B) / _B**0.5
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        for block in model.blocks:  # unplanted heads: small random queries and keys
            block.attn.W_Q.normal_(0, 0.02)
            block.attn.W_K.normal_(0, 0.02)
        model.embed.W_E[:, content] = content_vecs
        model.pos_embed.W_pos[:, pos] = eye
        a0, a1 = model.blocks[0].attn, model.blocks[1].attn
        a0.W_Q[1, pos] = scale * eye
        a0.W_K[1, pos] = scale * torch.roll(eye, 1, dims=1) * (1 - torch.eye(_B)[-1:].T)
        a0.W_V[1, content], a0.W_O[1, :, slot] = eye, eye
        a1.W_Q[0, content], a1.W_K[0, slot] = scale * eye, scale * eye
        a1.W_Q[1, content], a1.W_K[1, content] = scale * eye, scale * eye
        a1.W_V[2, content], a1.W_O[2, :, succ] = eye, eye
        for seq in ordinal_token_ids(model).values():
            for prev, nxt in zip(seq, seq[1:], strict=False):
                model.unembed.W_U[succ, nxt] = content_vecs[prev]
    return model
