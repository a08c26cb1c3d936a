"""Where a head mask acts: every position, the last one, chosen positions, or a token predicate.

``positions`` of :func:`~interp_heads.interventions.masks.mask_heads` is one of

- ``"all"``: every position of every forward pass (``choices.MaskPositions``);
- ``"last"``: position -1 of each forward pass: the last prompt token, then each generated one;
- ``"generated"``: every position of each forward pass that continues a KV cache, none of a pass
  that starts one: the prompt's pass is unmasked (so the first generated token is the unmasked
  model's) and each later pass, which reads the token generated last, is masked. This is what
  pyvene's ``generate`` without ``intervene_on_prompt`` does, the Cognitive Mirrors study's
  scope. It needs the cache: generation without it re-reads the prompt in every pass and is
  left unmasked (``mask_heads`` warns);
- a list of ints: positions of each row's sequence, indexed like a Python list. ``p >= 0`` is
  the row's ``p``-th token (0 = its first token, the BOS when the model prepends one; left padding
  is not counted), whether it is read in the prompt pass or generated later, so masked generation
  with the KV cache equals masked generation without it. ``p < 0`` counts from the end of each
  forward pass, as ``"last"`` does (``[-1]`` is ``"last"``): under the KV cache the prompt's last
  tokens, then each generated token for ``-1``. Positions a row does not have are skipped (none
  reached in any row of the block is refused when ``mask_heads`` ends: ``check_reached``);
- a predicate ``f(token: str) -> bool``: called with each token's text (as ``model.to_str_tokens``
  shows it, prompt and generated tokens alike); the mask acts where it is True.

``generated`` and the last two need to know, in every forward pass, where each row's tokens are: a forward
pre-hook on the model (:meth:`TokenPositions.attach`) reads the pass's tokens, its attention
mask (left padding) and the KV cache (the tokens already read) and leaves a ``[batch, pos]``
selection for the ``hook_z`` hooks. ``generate``, ``head_means`` and plain ``model(tokens)`` /
``run_with_hooks`` calls all go through it.
"""

from __future__ import annotations

import contextlib
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from interp_heads.choices import MaskPositions
from interp_heads.errors import InputError

TokenPredicate = Callable[[str], bool]
PositionSpec = str | MaskPositions | Sequence[int] | TokenPredicate


def parse_positions(positions: PositionSpec) -> str | TokenPositions:
    """``"all"`` / ``"last"``, or a :class:`TokenPositions` for ``"generated"``, a list of ints or
    a predicate."""
    if isinstance(positions, str):
        scope = MaskPositions.parse(positions)
        return TokenPositions(generated=True) if scope == MaskPositions.GENERATED else str(scope)
    if callable(positions):
        return TokenPositions(predicate=positions)
    try:
        items = list(positions)
    except TypeError:
        raise InputError(
            f"positions must be 'all', 'last', a list of ints or a predicate on a token's text, "
            f"got {type(positions).__name__}"
        ) from None
    bad = [p for p in items if isinstance(p, bool) or not isinstance(p, numbers.Integral)]
    if bad or not items:
        what = f"{bad[0]!r}" if bad else "an empty list"
        raise InputError(f"positions: expected a non-empty list of ints, got {what}")
    if len(set(items)) != len(items):
        raise InputError(f"positions lists a position twice: {items}")
    return TokenPositions(ints=tuple(int(p) for p in items))


@dataclass
class TokenPositions:
    """Chosen positions (``ints``), a token predicate or the generated positions (``generated``),
    resolved in every forward pass; ``passes_selecting`` counts the passes where any was."""

    ints: tuple[int, ...] = ()
    predicate: TokenPredicate | None = None
    generated: bool = False
    passes_selecting: int = 0
    selection: torch.Tensor | None = field(default=None, repr=False)  # [batch, pos] of this pass
    _verdicts: dict[int, bool] = field(default_factory=dict, repr=False)
    reached: int = field(default=0, repr=False)  # positions selected over every pass so far
    longest: int = field(default=0, repr=False)  # the longest row seen (tokens)

    def select(self, model, tokens: torch.Tensor, new_mask: torch.Tensor, before: torch.Tensor):
        """``[batch, pos]`` booleans for a pass reading ``tokens`` with ``new_mask`` (1: a real
        token), after ``before[b]`` tokens of row ``b`` already read (KV cache)."""
        real = new_mask.bool()
        if self.generated:  # a pass continuing a cache reads generated tokens only
            return real & (before > 0)[:, None]
        in_pass = real.long().cumsum(1) - 1  # index among the row's real tokens of this pass
        if self.predicate is not None:
            return real & self._matches(model, tokens)
        index = before[:, None] + in_pass  # the token's position in its row
        if len(before):
            self.longest = max(self.longest, int((before + real.long().sum(1)).max()))
        from_end = in_pass - real.long().sum(1, keepdim=True)  # -1: the pass's last real token
        sel = torch.zeros_like(real)
        for p in self.ints:
            sel |= (index == p) if p >= 0 else (from_end == p)
        return sel & real

    def _matches(self, model, tokens: torch.Tensor) -> torch.Tensor:
        ids = tokens.tolist()
        for i in {t for row in ids for t in row} - self._verdicts.keys():
            self._verdicts[i] = bool(self.predicate(model.tokenizer.decode([i])))
        return torch.tensor([[self._verdicts[t] for t in row] for row in ids], device=tokens.device)

    @contextlib.contextmanager
    def attach(self, model):
        """Resolve the selection before every forward pass of ``model``; clear it after."""

        def before_pass(module, args, kwargs):
            tokens = args[0] if args else kwargs.get("input", kwargs.get("tokens"))
            if isinstance(tokens, str | list):
                tokens = model.to_tokens(tokens)
            new_mask, before = _masks(tokens, kwargs)
            self.selection = self.select(model, tokens, new_mask, before)
            self.passes_selecting += bool(self.selection.any())
            self.reached += int(self.selection.sum())

        def after_pass(module, args, kwargs, output):
            self.selection = None

        handles = [
            model.register_forward_pre_hook(before_pass, with_kwargs=True),
            model.register_forward_hook(after_pass, with_kwargs=True, always_call=True),
        ]
        try:
            yield self
        finally:
            for h in handles:
                h.remove()

    def check_reached(self) -> None:
        """``InputError`` when chosen positions (``ints``) selected no token of any row in the
        passes that ran: out of range for every prompt, the mask changed nothing."""
        if self.ints and self.longest and not self.reached:
            raise InputError(
                f"positions {list(self.ints)} are out of range for every row (the longest had "
                f"{self.longest} tokens): the mask changed nothing"
            )

    def current(self, z: torch.Tensor) -> torch.Tensor:
        """The selection of the pass ``z`` (``[batch pos head_index d_head]``) belongs to."""
        sel = self.selection
        if sel is None or tuple(sel.shape) != tuple(z.shape[:2]):
            raise RuntimeError(
                "a position mask's hook_z ran outside a forward pass of the model it was "
                "attached to (mask_heads resolves positions per call of the model)"
            )
        return sel.to(z.device)


def _masks(tokens: torch.Tensor, kwargs: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """The pass's own attention mask ``[batch, pos]`` and each row's count of cached tokens."""
    batch, width = tokens.shape[0], tokens.shape[-1]
    mask = kwargs.get("attention_mask")
    tl_cache = kwargs.get("past_kv_cache")
    hf_cache = kwargs.get("past_key_values")
    before = torch.zeros(batch, dtype=torch.long, device=tokens.device)
    if tl_cache is not None:  # TransformerLens: the mask of the new tokens; the cache has the rest
        before = tl_cache.previous_attention_mask.to(tokens.device).long().sum(1)
    elif hf_cache is not None and mask is not None and mask.shape[1] > width:  # bridge: full mask
        before = mask[:, :-width].to(tokens.device).long().sum(1)
        mask = mask[:, -width:]
    if mask is None:
        mask = torch.ones((batch, width), dtype=torch.long, device=tokens.device)
    return mask.to(tokens.device), before


def blend(z: torch.Tensor, edited: torch.Tensor, sel: torch.Tensor) -> torch.Tensor:
    """``edited`` where ``sel`` (``[batch, pos]``) is True, ``z`` elsewhere."""
    return torch.where(sel[:, :, None, None], edited, z)
