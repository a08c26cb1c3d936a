"""Detectors of head kinds the field already knows: previous-token, duplicate-token, induction, successor.

The first three read attention patterns on *repeated random tokens* (a random sequence followed by
itself): a head's score is the share of its attention that falls on the cells of a detection pattern
(Elhage et al. 2021; Olsson et al. 2022), averaged over sequences, the ``"mul"`` measure of
TransformerLens' ``head_detector``:

- previous-token: query ``i`` attends to key ``i - 1``;
- duplicate-token: to earlier positions holding the same token;
- induction: to positions right after an earlier occurrence of the current token.

The successor score (Gould et al., ICLR 2024, "Successor heads") reads weights: each element ``t``
of an ordinal sequence (digits, letters, days, months, numbers) is embedded "effectively" (the
residual stream after layer 0 when ``t`` is the only token), passed through the head's OV circuit
and unembedded; the score is the share of elements whose top logit among the sequence's tokens is
their successor. Sequences whose elements are not single tokens of the model are skipped.

All scores are :class:`~interp_heads.attribution.HeadScores` (``method`` is the kind), so they rank,
tabulate and draw like attributions.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from jaxtyping import Float, Int

from interp_heads.attribution.scores import HeadScores
from interp_heads.models.tl_compat import HookedTransformer

PATTERN_KINDS = ("previous_token", "duplicate_token", "induction")
KINDS = (*PATTERN_KINDS, "successor")
# A head "is" a kind when its score reaches this (share of attention on the pattern; for
# successor, the share of elements mapped to their successor).
THRESHOLDS = {"previous_token": 0.4, "duplicate_token": 0.3, "induction": 0.3, "successor": 0.2}
ORDINALS: dict[str, list[str]] = {
    "digits": [str(i) for i in range(10)],
    "numbers": [str(i) for i in range(1, 21)],
    "letters": [chr(c) for c in range(ord("a"), ord("z") + 1)],
    "capitals": [chr(c) for c in range(ord("A"), ord("Z") + 1)],
    "days": "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split(),
    "months": "January February March April May June July August September October "
    "November December".split(),
}


def pattern_masks(
    tokens: Int[torch.Tensor, "batch pos"],
) -> dict[str, Float[torch.Tensor, "batch q_pos k_pos"]]:
    """The 0/1 detection pattern of each pattern kind, computed from the tokens themselves."""
    n = tokens.shape[1]
    prev = torch.zeros(n, n)
    prev[1:, :-1] = torch.eye(n - 1)
    same = (tokens[:, :, None] == tokens[:, None, :]).float()
    same = torch.tril(same * (1 - torch.eye(n)))  # earlier occurrences only, not the token itself
    induction = torch.zeros_like(same)
    induction[:, :, 1:] = same[:, :, :-1]  # the key right after the earlier occurrence
    return {
        "previous_token": prev.expand_as(same),
        "duplicate_token": same,
        "induction": torch.tril(induction),
    }


def repeated_random_tokens(
    model: HookedTransformer, n_seqs: int = 8, half: int = 24, seed: int = 0
) -> Int[torch.Tensor, "batch pos"]:
    """``n_seqs`` random sequences of ``half`` tokens, each followed by itself (BOS first when the
    model prepends one); special tokens are never drawn."""
    gen = torch.Generator().manual_seed(seed)
    specials = set(getattr(model.tokenizer, "all_special_ids", []) or [])
    pool = torch.tensor([i for i in range(model.cfg.d_vocab) if i not in specials])
    first = pool[torch.randint(len(pool), (n_seqs, half), generator=gen)]
    tokens = torch.cat([first, first], dim=1)
    if model.cfg.default_prepend_bos and model.tokenizer is not None:
        bos = torch.full((n_seqs, 1), model.tokenizer.bos_token_id)
        tokens = torch.cat([bos, tokens], dim=1)
    return tokens


@torch.no_grad()
def pattern_scores(
    model: HookedTransformer, tokens: Int[torch.Tensor, "batch pos"]
) -> dict[str, HeadScores]:
    """Previous-token, duplicate-token and induction scores of every head on ``tokens``."""
    masks = pattern_masks(tokens.cpu())
    out = {kind: torch.zeros(model.cfg.n_layers, model.cfg.n_heads) for kind in PATTERN_KINDS}
    names = {f"blocks.{layer}.attn.hook_pattern" for layer in range(model.cfg.n_layers)}
    _, cache = model.run_with_cache(tokens.to(model.cfg.device), names_filter=names.__contains__)
    for layer in range(model.cfg.n_layers):
        pattern = cache[f"blocks.{layer}.attn.hook_pattern"].float().cpu()  # batch head q k
        total = pattern.sum(dim=(-2, -1))
        for kind in PATTERN_KINDS:
            hit = (pattern * masks[kind][:, None]).sum(dim=(-2, -1))
            out[kind][layer] = (hit / total).mean(0)
    prov = {"n_seqs": tokens.shape[0], "seq_len": tokens.shape[1], "measure": "mul"}
    return {
        kind: HeadScores(
            out[kind], kind, "repeated_random_tokens", _METRIC[kind], dict(prov, rank_by="signed")
        )
        for kind in PATTERN_KINDS
    }


_METRIC = {
    "previous_token": "share of attention on the previous token",
    "duplicate_token": "share of attention on earlier copies of the current token",
    "induction": "share of attention on the token after an earlier copy of the current token",
    "successor": "share of ordinal elements whose OV-circuit top logit (within their sequence) is "
    "their successor",
}


def ordinal_token_ids(model: HookedTransformer) -> dict[str, list[int]]:
    """Each ordinal sequence as token ids (the first single-token form: with a leading space or
    without); sequences with fewer than 3 single-token elements are left out."""
    out = {}
    for name, words in ORDINALS.items():
        ids = []
        for word in words:
            forms = [
                model.tokenizer.encode(f, add_special_tokens=False) for f in (" " + word, word)
            ]
            single = next((f[0] for f in forms if len(f) == 1), None)
            if single is None:
                break
            ids.append(single)
        if len(ids) == len(words) >= 3 and len(set(ids)) == len(ids):
            out[name] = ids
    return out


@torch.no_grad()
def successor_scores(
    model: HookedTransformer,
    sequences: dict[str, list[int]] | None = None,
    progress: Callable[[int], object] | None = None,
):
    """Successor score of every head (Gould et al. 2024), a ``HeadScores``.

    Only the logits of the sequences' own tokens are computed (a few dozen columns of the
    unembedding, not the whole vocabulary: the score compares those alone). ``progress`` is
    called with 1 after each layer.
    """
    sequences = ordinal_token_ids(model) if sequences is None else sequences
    if not sequences:
        raise ValueError("no ordinal sequence is made of single tokens of this model")
    ids = sorted({i for seq in sequences.values() for i in seq})
    index = {t: i for i, t in enumerate(ids)}
    _, cache = model.run_with_cache(
        torch.tensor(ids, device=model.cfg.device)[:, None],
        names_filter=lambda n: n == "blocks.0.hook_resid_post",
    )
    effective = cache["blocks.0.hook_resid_post"][:, 0]  # token d_model
    hits = torch.zeros(model.cfg.n_layers, model.cfg.n_heads)
    n_total = sum(len(seq) - 1 for seq in sequences.values())
    for layer, block in enumerate(model.blocks):
        x = block.ln1(effective[:, None])[:, 0] if hasattr(block, "ln1") else effective
        w_v, b_v = _per_query_head(model, block.attn.W_V), block.attn.b_V
        v = torch.einsum("td,hde->the", x, w_v)
        v = v if b_v is None else v + _per_query_head(model, b_v)
        out = torch.einsum("the,hed->htd", v, block.attn.W_O)  # head token d_model
        final = getattr(model, "ln_final", None) or torch.nn.Identity()
        logits = _unembed_columns(model, final(out), ids)  # head token ids
        for seq in sequences.values():
            rows = torch.tensor([index[t] for t in seq[:-1]])
            cols = torch.tensor([index[t] for t in seq])
            best = logits[:, rows][:, :, cols].argmax(-1)  # head element: index into seq
            hits[layer] += (best == torch.arange(1, len(seq))).sum(-1).float().cpu()
        if progress is not None:
            progress(1)
    prov = {"sequences": {k: len(v) for k, v in sequences.items()}, "rank_by": "signed"}
    return HeadScores(hits / n_total, "successor", "ordinal_sequences", _METRIC["successor"], prov)


def _unembed_columns(model, x: torch.Tensor, ids: list[int]) -> torch.Tensor:
    """``model.unembed(x)[..., ids]`` without the rest of the vocabulary (``W_U``'s columns)."""
    w_u, b_u = getattr(model, "W_U", None), getattr(model, "b_U", None)
    if not isinstance(w_u, torch.Tensor) or w_u.shape[0] != x.shape[-1]:
        return model.unembed(x)[..., ids]  # no plain unembedding matrix: the whole vocabulary
    cols = torch.tensor(ids, device=w_u.device)
    out = x @ w_u[:, cols]
    return out if b_u is None else out + b_u[cols]


def _per_query_head(model, w: torch.Tensor) -> torch.Tensor:
    """``w`` with one slice per query head: the bridge gives value weights per key/value head
    under grouped-query attention (query head ``h`` reads group ``h // (n_heads / n_kv)``)."""
    n = model.cfg.n_heads
    return w if w.shape[0] == n else w.repeat_interleave(n // w.shape[0], dim=0)


def known_head_scores(
    model: HookedTransformer,
    n_seqs: int = 8,
    half: int = 24,
    seed: int = 0,
    progress: Callable[[int], object] | None = None,
) -> dict[str, HeadScores]:
    """All four detectors: pattern kinds on repeated random tokens, and the successor score.

    ``progress`` is called with the units done: 1 for the pattern kinds' forward pass, then 1 per
    layer of the successor score (``1 + n_layers`` in all).
    """
    out = pattern_scores(model, repeated_random_tokens(model, n_seqs, half, seed))
    if progress is not None:
        progress(1)
    try:
        out["successor"] = successor_scores(model, progress=progress)
    except ValueError:
        pass  # no ordinal sequence of single tokens (the kind is then absent)
    return out


def known_kinds(scores: dict[str, HeadScores], heads) -> dict[tuple[int, int], list[str]]:
    """For each head of ``heads``, the kinds whose score reaches :data:`THRESHOLDS`."""
    return {
        tuple(h): [
            kind
            for kind, s in scores.items()
            if float(s.scores[h[0], h[1]]) >= THRESHOLDS.get(kind, 1.0)
        ]
        for h in heads
    }
