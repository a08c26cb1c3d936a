"""The TransformerLens-style induction score of every head: on a block of distinct random letters
followed by its copy, the mean attention from each position of the copy to the position after
that token's first occurrence (Olsson et al. 2022; TransformerLens' ``induction_score``). It
checks that a zoo induction model solves its task the known way: a layer-1 head with a high score.
"""

from __future__ import annotations

import random

import numpy as np
import torch

from interp_heads.zoo.tasks import LETTERS

HALF = 8  # the repeated block's length: 2 * HALF fits the zoo's n_ctx (16)


def repeated_letters(n: int, seed: int = 0, half: int = HALF) -> list[str]:
    """``n`` sequences of ``half`` distinct random letters followed by the same letters again."""
    rng = random.Random(f"induction-score:{seed}")
    return ["".join(block + block) for block in (rng.sample(LETTERS, half) for _ in range(n))]


def induction_scores(model, n: int = 64, seed: int = 0, half: int = HALF) -> np.ndarray:
    """``[n_layers, n_heads]``: each head's mean attention, over ``n`` repeated sequences and the
    copy's positions ``q`` (``half`` .. ``2 half - 1``), from ``q`` to ``q - half + 1``."""
    from interp_heads.zoo.train import token_ids

    tokens = token_ids(model, repeated_letters(n, seed, half))
    names = [f"blocks.{layer}.attn.hook_pattern" for layer in range(model.cfg.n_layers)]
    with torch.no_grad():
        _, cache = model.run_with_cache(tokens, names_filter=lambda name: name in names)
    # the stripe pattern[..., q, q - half + 1] is the diagonal at offset 1 - half; its first
    # cell is q = half - 1, the first block's end, not the copy
    stripes = [cache[name].diagonal(offset=1 - half, dim1=-2, dim2=-1)[..., 1:] for name in names]
    return torch.stack([s.mean(dim=(0, -1)) for s in stripes]).numpy()


def summary(scores) -> str:
    """One sentence on the scores: each layer's best head and its score (the page's check that an
    induction model has a layer-1 induction head)."""
    best = []
    for layer, row in enumerate(np.asarray(scores, dtype=float)):
        head = int(np.argmax(row))
        best.append(f"layer {layer}: L{layer}H{head} {row[head]:.2f}")
    return (f"Induction score (mean attention from each position of a repeated block of "
            f"{HALF} distinct letters to the token after its first occurrence; chance about "
            f"{1 / HALF:.2f} or less), best head per layer: " + "; ".join(best) + ".")  # fmt: skip
