"""Metric interface: one :class:`MetricItem` per generated answer, per-item scores in [0, 1]."""

from __future__ import annotations

import contextlib
import logging
import warnings
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass

# a proportion metric's floor: a drop from an unmasked score under a quarter is below the smallest
# TopK - RandomK difference the pages' cells detect at 80% power (0.25 at n = 24, docs/method.md)
PROPORTION_FLOOR = 0.25
_NOISY_LOGGERS = ("pytorch_lightning", "lightning", "lightning_fabric", "transformers", "comet")


class MetricUnavailable(RuntimeError):
    """Raised when a metric cannot be loaded (missing checkpoint, no network); one-line message."""


@dataclass(frozen=True)
class MetricItem:
    """One scored answer.

    Attributes:
        src: the plain question (COMET's source).
        mt: the model's generation (metrics score its first non-empty line).
        ref: the reference answer.
        aliases: other accepted answers (used by accuracy only).
        distractors: wrong candidates from the prompt; naming one makes the answer wrong
            (used by accuracy only).
        unmasked: the unmasked model's answer to the same prompt (``reference = "unmasked"``).
    """

    src: str
    mt: str
    ref: str
    aliases: tuple[str, ...] = ()
    distractors: tuple[str, ...] = ()
    unmasked: str | None = None


@dataclass(frozen=True)
class MetricContext:
    """What every metric is built with besides its options (``METRICS.build``).

    Attributes:
        allow_fallback: whether a metric that cannot load may return its stand-in (COMET's
            MiniLM) instead of raising :class:`MetricUnavailable`.
    """

    allow_fallback: bool = True


class Metric(ABC):
    """A metric over generated answers.

    Attributes:
        name: machine id ("accuracy", "comet", "minilm_cosine", "chrf").
        label: what plots and tables show.
        is_comet: True only for real COMET models.
        per_condition: scored from the masked model's logits by one forward pass per condition
            (``metrics.logits``), not from the answers: the sweep never calls its ``score``.
        proportion: every score is 0 or 1, so a cell's mean is a proportion and gets an exact
            (Clopper-Pearson) interval (``sweep.stats.summarize``).
        formats: the prompt formats (``choices.PromptFormat`` values) whose answers it can score;
            empty: every format. ``blind`` says why it cannot score the others.
        floor: the unmasked score below which a mask has nothing left to remove (None: no
            floor, e.g. a score that grows with damage). ``metrics.scorable`` reads both.
    """

    name: str = ""
    aliases: tuple[str, ...] = ()
    label: str = ""
    is_comet: bool = False
    per_condition: bool = False
    proportion: bool = False
    formats: tuple[str, ...] = ()
    blind: str = ""
    floor: float | None = None

    @classmethod
    def build(cls, options, ctx: MetricContext) -> Metric:
        """The metric a run asks for by name (``METRICS.build``). ``options``: its ``Options``
        (None for a metric that declares none); ``ctx.allow_fallback``: whether a metric that
        cannot load may return its stand-in (COMET's MiniLM) instead of raising
        :class:`MetricUnavailable`."""
        return cls()

    @abstractmethod
    def score(self, items: list[MetricItem]) -> list[float]:
        """One score per item, in item order."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, label={self.label!r})"


def first_line(text: str) -> str:
    """First non-empty line of ``text``, stripped (the part of a generation that is scored)."""
    from interp_heads.tasks.checking import first_line as _first_line

    return _first_line(text)


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Silence pytorch-lightning / transformers / COMET logging and warnings inside the block."""
    levels = {}
    for name in _NOISY_LOGGERS:
        logger = logging.getLogger(name)
        levels[name] = logger.level
        logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
