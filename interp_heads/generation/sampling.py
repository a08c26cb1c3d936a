"""How the next token is picked: greedy (the default), or sampled with temperature and top-p.

Greedy decoding is what every sweep, baseline and stored result uses; sampling is for users who
want to see the spread of a masked model's answers. A sampled run is reproducible with ``seed``
(one ``torch.Generator`` per call, drawn from in batch order).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from interp_heads.arguments import torch_seed
from interp_heads.errors import InputError


@dataclass(frozen=True)
class Sampling:
    """``temperature = 0``: greedy (arg-max). Otherwise sample from ``softmax(logits / T)``
    restricted to the smallest set of tokens whose probability reaches ``top_p``."""

    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None

    def __post_init__(self):
        t, p = self.temperature, self.top_p
        if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t) or t < 0:
            raise InputError(f"temperature must be a finite number >= 0 (0: greedy), got {t!r}")
        if isinstance(p, bool) or not isinstance(p, int | float) or not 0 < p <= 1:
            raise InputError(f"top_p must be in (0, 1], got {p!r}")
        if self.seed is not None:
            torch_seed(self.seed)
        if self.greedy and p != 1:
            raise InputError("top_p applies to sampling: also pass a temperature > 0")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def generator(self, device) -> torch.Generator | None:
        """The seeded generator of one call (None: greedy, or torch's global RNG without a seed)."""
        if self.greedy or self.seed is None:
            return None
        return torch.Generator(device=device).manual_seed(self.seed)

    def pick(self, logits: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
        """The next token of each row ``[batch]`` from its last-position logits ``[batch, vocab]``."""
        if self.greedy:
            return logits.argmax(dim=-1)
        probs = torch.softmax(logits.float() / self.temperature, dim=-1)
        if self.top_p < 1:
            sorted_p, order = probs.sort(dim=-1, descending=True)
            outside = sorted_p.cumsum(dim=-1) - sorted_p >= self.top_p  # the top token stays
            probs = torch.zeros_like(probs).scatter(-1, order, sorted_p.masked_fill(outside, 0.0))
        return torch.multinomial(probs, 1, generator=generator)[:, 0]
