"""The selection's base class, what it selects from, and its registry (``interventions.selections``)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from interp_heads.errors import InputError
from interp_heads.heads import Head
from interp_heads.registry import Registry

if TYPE_CHECKING:  # numpy loads with the first draw: a config's check needs none
    import numpy as np


@dataclass(frozen=True)
class SelectionContext:
    """What a selection draws on for one task.

    Attributes:
        ranking: every head, most important first.
        n_layers, n_heads: the model's shape.
        salt: the task's name, so each task draws its own random heads.
        others: the run's other tasks' rankings (``exclusive_topk`` avoids their TopK).
        by_abs, by_signed: every head by ``|score|`` and by signed score, highest first (from
            a ``HeadScores``; empty when the ranking is a bare list of heads, which has no
            scores: then ``ranking`` is the only order). ``lowk`` and ``tailk`` read them.
    """

    ranking: tuple[Head, ...]
    n_layers: int
    n_heads: int
    salt: str = ""
    others: tuple[tuple[Head, ...], ...] = ()
    by_abs: tuple[Head, ...] = ()
    by_signed: tuple[Head, ...] = ()


class Selection:
    """Which heads a condition masks, given k and a seed.

    Subclasses set the class attributes, build themselves from their ``Options`` (None when they
    declare none) and a :class:`SelectionContext` (:meth:`build`) and implement :meth:`select`.
    ``name`` is the registered name (config, ``--selections``), ``display`` the name in tables,
    condition keys and legends; a ``random`` selection is drawn once per seed and is a control
    the significance tests compare TopK with. A ``kept`` selection counts the heads it *keeps*
    in k and masks every other head (a sufficiency condition: k = 0 masks every head, k = all
    heads masks none); its controls are the kept random selections, and :meth:`keeps` names the
    kept heads. ``dash`` is its line style in the figures.
    """

    name: ClassVar[str] = ""
    aliases: ClassVar[tuple[str, ...]] = ()
    display: ClassVar[str] = ""
    label: ClassVar[str] = ""  # the legend's words (``display`` when empty)
    random: ClassVar[bool] = False
    kept: ClassVar[bool] = False
    dash: ClassVar[str] = "solid"

    @classmethod
    def build(cls, options, ctx: SelectionContext) -> Selection:
        raise NotImplementedError

    def select(self, k: int, seed: int = 0) -> list[Head]:
        """The heads masked at ``k`` (and ``seed``, for a random selection)."""
        raise NotImplementedError

    def keeps(self, k: int, seed: int = 0) -> list[Head]:
        """The heads a ``kept`` selection keeps at ``k`` (every other head is masked)."""
        raise NotImplementedError(f"{self.display} masks the heads it selects; it keeps none")

    @classmethod
    def check_k(cls, k: int, available: int) -> int:
        """``k`` itself when ``0 <= k <= available``, else InputError."""
        if not 0 <= k <= available:
            raise too_many(k, available, cls.display)
        return k

    @classmethod
    def legend(cls) -> str:
        return cls.label or cls.display


SELECTIONS: Registry[type[Selection]] = Registry("selection", context=SelectionContext)


def rng(*parts) -> np.random.Generator:
    """A generator seeded by ``parts`` (stable across processes and platforms)."""
    import numpy as np

    digest = hashlib.sha256(repr(parts).encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def ranked_heads(ranking) -> list[Head]:
    """All heads, most important first, from a ``HeadScores`` or an ordered list of heads."""
    if hasattr(ranking, "top"):
        n_layers, n_heads = ranking.scores.shape
        return list(ranking.top(n_layers * n_heads))
    return [tuple(h) for h in ranking]


def too_many(k: int, available: int, who: str) -> InputError:
    return InputError(f"k={k} exceeds the {available} heads available to {who}")


def complement(heads: Sequence[Head], kept: Sequence[Head]) -> list[Head]:
    """``heads`` without ``kept``, in ``heads``' order (what a kept-set selection masks)."""
    keep = {tuple(h) for h in kept}
    return [tuple(h) for h in heads if tuple(h) not in keep]


def make_selections(
    names: Sequence[str],
    ranking,
    n_layers: int,
    n_heads: int,
    salt: str = "",
    options: dict | None = None,
    others: Sequence = (),
) -> list[Selection]:
    """The registered selections ``names`` (any spelling), built for one task's ``ranking``
    (``options``: the selections' options by name, each checked; ``{"exclude_top": True}``)."""
    scored = hasattr(ranking, "top") and hasattr(ranking, "scores")
    n = n_layers * n_heads
    ctx = SelectionContext(
        tuple(ranked_heads(ranking)),
        n_layers,
        n_heads,
        salt,
        tuple(tuple(ranked_heads(o)) for o in others),
        tuple(tuple(h) for h in ranking.top(n, "abs")) if scored else (),
        tuple(tuple(h) for h in ranking.top(n, "signed")) if scored else (),
    )
    return [SELECTIONS.build(name, options, ctx) for name in names]


def display_names(random: bool | None = None, kept: bool | None = None) -> list[str]:
    """The registered selections' table names (only the random ones, or only the others; only
    the kept-set ones, or only the masked-set ones)."""
    return [
        c.display
        for c in SELECTIONS.classes()
        if (random is None or c.random == random) and (kept is None or c.kept == kept)
    ]


def by_display(display: str) -> type[Selection] | None:
    """The registered selection whose table name is ``display`` (None: not registered)."""
    return next((c for c in SELECTIONS.classes() if c.display == display), None)
