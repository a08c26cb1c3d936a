"""Turn metric names from the CLI/config into :class:`Metric` objects, with an offline fallback."""

from __future__ import annotations

import logging
import sys

from interp_heads.errors import InputError
from interp_heads.metrics.accuracy import Accuracy
from interp_heads.metrics.base import Metric, MetricUnavailable
from interp_heads.metrics.comet_metric import CometMetric
from interp_heads.metrics.embedding import ChrF, MiniLMCosine
from interp_heads.metrics.seed_accuracy import BleuRougeCosine

log = logging.getLogger(__name__)

DEFAULT_COMET_MODEL = "Unbabel/wmt22-comet-da"
METRIC_NAMES = ("accuracy", "comet", "minilm_cosine", "chrf", "bleu_rouge_cosine")


def fallback_note(reason: str) -> str:
    """The one-line note printed when COMET falls back to the MiniLM stand-in."""
    return (
        f"COMET unavailable ({reason}); using MiniLM cosine, an offline stand-in. "
        "To enable COMET give a checkpoint: --comet-model PATH_OR_NAME (ablate) or comet_model = ... (run config)."
    )


def _check_named_path(comet_model: str | None) -> None:
    """A COMET checkpoint named as a path must exist (no silent fallback for a typo)."""
    from pathlib import Path

    if comet_model is None:
        return
    looks_like_path = (
        comet_model.startswith((".", "/", "~"))
        or comet_model.count("/") > 1
        or comet_model.endswith(".ckpt")
    )  # a hub name is "org/name"
    if looks_like_path and not Path(comet_model).expanduser().exists():
        raise MetricUnavailable(f"comet model {comet_model!r}: no such file or folder")


def _check_comet_environment() -> None:
    """COMET cannot be installed next to transformers 5 (the tl4 environment): say where it runs."""
    import importlib.metadata

    if int(importlib.metadata.version("transformers").split(".")[0]) >= 5:
        raise MetricUnavailable(
            "COMET needs transformers < 5 (unbabel-comet 2.2.7), not this environment's "
            f"{importlib.metadata.version('transformers')}; run without comet here and score the "
            "run's generations from the default environment (make setup): "
            "interp-heads score RUN --metrics comet"
        )


def resolve_metrics(
    names: list[str], comet_model: str | None = None, allow_fallback: bool = True
) -> list[Metric]:
    """Metric objects for ``names`` (``accuracy``, ``comet``, ``minilm_cosine``, ``chrf``).

    ``comet`` becomes a :class:`CometMetric` when its checkpoint (``comet_model``, default
    ``Unbabel/wmt22-comet-da``) loads; otherwise, with ``allow_fallback``, a :class:`MiniLMCosine`
    and a printed note, else :class:`MetricUnavailable` is raised. Duplicates are dropped.

    Raises:
        ValueError: for an unknown metric name.
        MetricUnavailable: when COMET cannot load and ``allow_fallback`` is False.
    """
    out: list[Metric] = []
    for raw in names:
        name = raw.strip().lower()
        if name == "accuracy":
            metric: Metric = Accuracy()
        elif name == "comet":
            _check_comet_environment()
            _check_named_path(comet_model)
            metric = CometMetric(comet_model or DEFAULT_COMET_MODEL)
            try:
                metric.load()
            except MetricUnavailable as exc:
                if not allow_fallback:
                    raise
                note = fallback_note(str(exc))
                log.debug(note)
                print(note, file=sys.stderr)
                metric = MiniLMCosine()
        elif name in ("minilm_cosine", "minilm"):
            metric = MiniLMCosine()
        elif name == "chrf":
            metric = ChrF()
        elif name == "bleu_rouge_cosine":
            metric = BleuRougeCosine()
        else:
            raise InputError(f"unknown metric {raw!r}; choose from {', '.join(METRIC_NAMES)}")
        if metric.name not in {m.name for m in out}:
            out.append(metric)
    return out
