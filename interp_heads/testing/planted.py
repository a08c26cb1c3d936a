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

from interp_heads.models.load import attach_tokenizer
from interp_heads.models.tl_compat import HookedTransformer, HookedTransformerConfig
from interp_heads.testing.tiny import SPECIALS, byte_tokenizer

PLANTED = {
    "previous_token": (0, 1),
    "induction": (1, 0),
    "duplicate_token": (1, 1),
    "successor": (1, 2),
}
_B = 32  # dimensions per block of the residual stream


def planted_model(seed: int = 0, scale: float = 15.0) -> HookedTransformer:
    """The model described in the module docstring (byte-level tokenizer, 32 positions)."""
    from interp_heads.analysis.known_heads import ordinal_token_ids

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


LABEL_HEAD = (0, 2)  # the head of ``label_planted_model`` whose z carries the task label


def label_planted_model(seed: int = 0, marker: float = 3.0) -> HookedTransformer:
    """A random 2-layer attention-only model where only ``LABEL_HEAD``'s z separates two tasks.

    The prompts of :func:`label_planted_tasks` differ only in their first byte, ``A`` or ``B``,
    whose embeddings are ``+marker`` and ``-marker`` on residual dimension 0 (no other token or
    position has a component there). ``LABEL_HEAD`` attends uniformly and its value reads only
    dimension 0, so its z is ``+-marker`` times its attention to the first token; it writes to
    dimension 1. Every other head's queries, keys and values ignore dimensions 0 and 1, so its z is
    the same for an ``A`` prompt and the matching ``B`` prompt.
    """
    from interp_heads.testing.tiny import byte_tokenizer

    cfg = HookedTransformerConfig(
        n_layers=2, d_model=64, n_heads=4, d_head=16, n_ctx=64, d_vocab=len(SPECIALS) + 256,
        attn_only=True, normalization_type=None, positional_embedding_type="standard",
        act_fn="relu", default_prepend_bos=False, seed=seed, device="cpu",
    )  # fmt: skip
    torch.manual_seed(seed)
    model = attach_tokenizer(HookedTransformer(cfg).eval(), byte_tokenizer())
    tok = model.tokenizer
    a, b = (tok.convert_tokens_to_ids(c) for c in "AB")
    layer, head = LABEL_HEAD
    with torch.no_grad():
        model.embed.W_E[:, :2] = 0
        model.embed.W_E[b] = model.embed.W_E[a]  # the markers differ on dimension 0 only
        model.pos_embed.W_pos[:, :2] = 0
        model.embed.W_E[a, 0], model.embed.W_E[b, 0] = marker, -marker
        for i, block in enumerate(model.blocks):
            attn = block.attn
            blind = slice(0, 1 if i == layer else 2)  # what the other heads cannot read
            for w in (attn.W_Q, attn.W_K, attn.W_V):
                w[:, blind] = 0
            attn.W_O[:, :, :2] = 0  # nor write
        planted = model.blocks[layer].attn
        for w in (planted.W_Q, planted.W_K, planted.W_V, planted.W_O):
            w[head] = 0
        planted.W_V[head, 0, 0] = 1.0
        planted.W_O[head, 0, 1] = 1.0
    return model


def label_planted_tasks(n: int = 24, seed: int = 0):
    """Two tasks (``task_a``, ``task_b``) of ``n`` examples each: the same random lowercase prompts
    behind the marker byte ``A`` or ``B``."""
    import random

    from interp_heads.tasks.schema import Example, Task

    rng = random.Random(seed)
    bodies = ["".join(rng.choices("abcdefghij", k=rng.randint(4, 12))) for _ in range(n)]
    return [
        Task(
            f"task_{m.lower()}",
            [
                Example(f"{m}{i}", f"task_{m.lower()}", m + body, "x")
                for i, body in enumerate(bodies)
            ],
        )
        for m in "AB"
    ]
