"""Metrics on generated answers: accuracy, COMET, offline stand-ins (MiniLM cosine, chrF) and the
Cognitive Mirrors rule; and metrics of the masked model's logits (answer log-prob, logit
difference, KL from the unmasked model), one forward pass per condition."""

# the import order is the registration order: the order names are listed in (help, tables)
# isort: off
from interp_heads.metrics import (  # noqa: F401 (each registers its metrics)
    accuracy,
    comet_metric,
    embedding,
    seed_accuracy,
    cognitive_mirrors,
    logits,
)

# isort: on
from interp_heads.metrics.accuracy import Accuracy
from interp_heads.metrics.base import Metric, MetricContext, MetricItem, MetricUnavailable
from interp_heads.metrics.cache import MetricCache
from interp_heads.metrics.cognitive_mirrors import CognitiveMirrorsAccuracy, CognitiveMirrorsComet
from interp_heads.metrics.comet_metric import CometMetric
from interp_heads.metrics.comet_offline import build_offline_comet_checkpoint
from interp_heads.metrics.embedding import ChrF, MiniLMCosine
from interp_heads.metrics.logits import AnswerLogprob, KLUnmasked, LogitDiff, LogitMetric
from interp_heads.metrics.registry import METRICS, resolve_metrics
from interp_heads.metrics.scorable import scorable
from interp_heads.metrics.seed_accuracy import BleuRougeCosine

__all__ = [
    "METRICS",
    "Accuracy",
    "AnswerLogprob",
    "BleuRougeCosine",
    "ChrF",
    "CognitiveMirrorsAccuracy",
    "CognitiveMirrorsComet",
    "CometMetric",
    "KLUnmasked",
    "LogitDiff",
    "LogitMetric",
    "Metric",
    "MetricCache",
    "MetricContext",
    "MetricItem",
    "MetricUnavailable",
    "MiniLMCosine",
    "build_offline_comet_checkpoint",
    "resolve_metrics",
    "scorable",
]
