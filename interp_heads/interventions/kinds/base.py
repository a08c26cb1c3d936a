"""The ablation kind's base class, its rewrite of ``hook_z`` and its registry (``interventions.kinds``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, ClassVar

from interp_heads.errors import InputError
from interp_heads.registry import NoContext, Registry


@dataclass(frozen=True)
class Rewrite:
    """What one layer's masked heads become: ``z = offset + coef * z`` on those heads.

    ``coef`` None means 0 (a replacement: ``z = offset``); ``offset`` None means zeros. Every path
    that masks (``mask_heads``, the per-row masks of packed sweeps) applies it, so a kind's
    arithmetic lives in the kind.
    """

    offset: Any = None  # [n_masked, d_head], [from_end, n_masked, d_head] (per position), None
    coef: float | None = None

    @property
    def per_position(self) -> bool:
        """Whether the offset has one row per position counted from the end (``position_mean``)."""
        return self.offset is not None and self.offset.dim() == 3

    def apply(self, z):
        """``z[batch, pos, masked heads, d_head]`` rewritten (a new tensor; ``z`` is not changed)."""
        import torch

        offset = None if self.offset is None else self.offset.to(z.device, z.dtype)
        if self.per_position:  # row j for the position j before the pass's last one
            ends = _PROMPT_ENDS.get()
            if ends is None:
                back = torch.arange(z.shape[-3] - 1, -1, -1, device=z.device)
            else:  # [batch, pos]: j before the row's last prompt token, 0 after it
                here = torch.arange(z.shape[-3], device=z.device)
                back = (ends.to(z.device)[:, None] - here[None]).clamp(min=0)
            offset = offset[back.clamp(max=len(offset) - 1)]
        if self.coef is None:
            return torch.zeros_like(z) if offset is None else offset.expand_as(z)
        scaled = z * torch.tensor(self.coef, dtype=z.dtype, device=z.device)
        return scaled if offset is None else scaled + offset


# each row's last prompt position in a teacher-forced pass of prompt and answer (None: the pass's
# last position is the prompt's last token, as in generation)
_PROMPT_ENDS: ContextVar = ContextVar("prompt_ends", default=None)


@contextmanager
def prompt_ends(last) -> Iterator[None]:
    """Within it, a per-position rewrite (``position_mean``) counts positions back from each
    row's ``last`` position (``[batch]``: its last prompt token) instead of the pass's end, and
    gives the positions after it (the answer's) row 0, the last prompt token's mean, as each
    generated token's one-position pass takes under the KV cache. For teacher-forced passes that
    append the answer to the prompt (``metrics.logit_scores``): without it the prompt's rows would
    be shifted by the answer's length."""
    token = _PROMPT_ENDS.set(last)
    try:
        yield
    finally:
        _PROMPT_ENDS.reset(token)


class Ablation:
    """An ablation kind. Subclasses set ``name``, declare their options in a nested ``Options``
    frozen dataclass (none by default) and override what differs from zero ablation.

    A kind object holds its options (``kind.options``); ``KINDS.options()`` gathers every
    registered kind's, which is where the config keys, the CLI flags, the digests and
    ``mask_heads``' keywords come from. A field's ``metadata["help"]`` is its one-line help.
    """

    name: ClassVar[str] = ""
    aliases: ClassVar[tuple[str, ...]] = ()

    @dataclass(frozen=True)
    class Options:
        """No options."""

    def __init__(self, options=None):
        self.options = self.Options() if options is None else options

    @classmethod
    def build(cls, options, ctx: NoContext) -> Ablation:
        """The kind with its ``Options`` (``KINDS.build``; a kind needs no context)."""
        return cls(options)

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other.options == self.options

    def __hash__(self) -> int:
        return hash((type(self), self.options))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.options!r})"

    def values(self, model, prompts, *, batch_size: int = 32, batch_padding: int | None = None):
        """The values shared by every condition of a task (None: the kind needs none), from
        forward passes of ``batch_size`` prompts (``batch_padding``: cut as a sweep's batches,
        ``interventions.means.head_means``; a sweep passes it only when its config sets it)."""
        return None

    def replacement(self, layer: int, heads: list[int], values, generator):
        """What ``z[:, :, heads]`` of ``layer`` is set to, ``[len(heads), d_head]``; None: zeros.

        ``generator`` is one seeded ``torch.Generator`` per mask, drawn from in layer order.
        """
        return None

    def rewrite(self, layer: int, heads: list[int], values, generator) -> Rewrite:
        """How ``layer``'s masked ``heads`` are rewritten; a replacement by default."""
        return Rewrite(offset=self.replacement(layer, heads, values, generator))

    def linear_baseline(self, z_sum, counts, seed: int):
        """The replacement ``ablation_atp`` estimates against: ``[1 or example, layer, head, d_head]``.

        ``z_sum``: each example's sum of ``z`` over its non-pad positions ``[example, layer, head,
        d_head]``; ``counts``: those positions per example ``[example]``. A kind without one
        (the default) is refused by ``ablation_atp``.
        """
        raise NotImplementedError

    @property
    def linear(self) -> bool:
        """Whether ``ablation_atp`` can estimate this kind (it defines :meth:`linear_baseline`)."""
        return type(self).linear_baseline is not Ablation.linear_baseline

    def key(self) -> dict:
        """This kind's options as resume keys hold them (every option, by name)."""
        return dataclasses.asdict(self.options)


KINDS: Registry[type[Ablation]] = Registry("ablation kind")


def get_kind(kind: str | Ablation, **options) -> Ablation:
    """The kind ``kind`` names (``KINDS``), built with the options it declares among ``options``
    (each checked; another kind's option is not this kind's and is left out); an ``Ablation``
    object is returned as is."""
    if isinstance(kind, Ablation):
        return kind
    return KINDS.build(kind, options)


def linear_kind(name: str) -> Ablation:
    """The kind ``name`` for ``ablation_atp``; InputError for one without a linear baseline."""
    kind = get_kind(name)
    if not kind.linear:
        raise InputError(f"ablation kind {kind.name!r} has no linear baseline for ablation_atp")
    return kind
