"""One vocabulary for config, CLI, tables and plots.

Every allowed value of a run's choices is defined here once, as a ``StrEnum`` (members compare equal
to their strings, so ``"mean" == AblationKind.MEAN`` and TOML/CLI strings work unchanged):

- :class:`AttributionMethod`: how heads are *scored* (``attribute --method``, ``attribution =``).
- :class:`AblationKind`: what a masked head's ``hook_z`` is *replaced with* (``--ablation``,
  ``ablation =``). Never called "method".
- :class:`MaskPositions`: where a mask acts (``positions =``): ``all``, ``last`` or ``generated``.
- :class:`SelectionName`: which heads a condition masks (each selection's table name is its
  class's ``display``).
- :class:`PromptFormat`, :class:`MetricName`, :class:`ExecutorName` and :class:`BackendName`.

The extension points (kinds, methods, metrics, executors, backends) are registries whose built-in names
are these enums (``interp_heads.registry``).

Words: a *head label* is ``"L{layer}H{head}"`` (``heads.head_label``); a *metric label* is the
human-readable name of a metric (``Metric.label``, e.g. ``"Accuracy"``). Tables keep their column
``label`` for both (``ranking.csv``: head label, ``sweep.parquet``: metric label), as stored tables have them.
"""

from __future__ import annotations

from enum import StrEnum

from interp_heads.errors import InputError


class Choice(StrEnum):
    @classmethod
    def parse(cls, value: str, what: str | None = None):
        """The member for ``value`` (case, ``-`` and ``_`` ignored; aliases allowed), else ValueError."""
        key = str(value).strip().lower().replace("-", "").replace("_", "")
        for member in cls:
            names = {member.value, *getattr(member, "aliases", ())}
            if key in {n.replace("_", "") for n in names}:
                return member
        what = what or _WHAT.get(cls.__name__, cls.__name__)
        raise InputError(f"unknown {what} {value!r}; use one of {', '.join(cls.values())}")

    @classmethod
    def values(cls) -> tuple[str, ...]:
        return tuple(m.value for m in cls)


class AttributionMethod(Choice):
    AUTO = "auto"
    EXACT = "exact"
    ATP = "atp"
    ABLATION_ATP = "ablation_atp"
    ABLATION_IG = "ablation_ig"
    GRADXACT = "gradxact"
    HEADMASK = "headmask"
    MEAN_ABLATION = "mean_ablation"
    RETRIEVAL_SCORE = "retrieval_score"
    PROBE = "probe"


class AblationKind(Choice):
    ZERO = "zero"
    MEAN = "mean"
    RESAMPLE = "resample"
    SCALE = "scale"
    POSITION_MEAN = "position_mean"


SCALE_FACTOR = 1e-4  # ablation "scale": the Cognitive Mirrors mask, the head's o_proj input x 1e-4


class MaskPositions(Choice):
    """Where a mask acts: every position, the last position of each forward pass, or the
    generated positions only (the prompt's pass unmasked: the Cognitive Mirrors study's scope)."""

    ALL = "all"
    LAST = "last"
    GENERATED = "generated"


class SelectionName(Choice):
    """Which heads a condition masks (``interventions.selections.SELECTIONS``; each selection
    class holds its table name, ``display``)."""

    TOPK = "topk"
    RANDOMK = "randomk"
    LAYERMATCHED = "layermatched"
    EXCLUSIVE_TOPK = "exclusive_topk"
    LOWK = "lowk"
    ALL_BUT_TOPK = "all_but_topk"  # kept-set: keep TopK, mask the rest (the study's ``last``)
    ALL_BUT_RANDOMK = "all_but_randomk"  # kept-set control: keep k random heads

    @property
    def aliases(self) -> tuple[str, ...]:
        return {
            SelectionName.LAYERMATCHED: ("layermatchedrandomk",),
            SelectionName.LOWK: ("bottomk",),
            SelectionName.ALL_BUT_TOPK: ("last", "allbuttopk", "keep_topk"),
            SelectionName.ALL_BUT_RANDOMK: ("allbutrandomk", "keep_randomk"),
        }.get(self, ())


BASELINE = "baseline"  # the selection column of the unmasked condition (k = 0)


class PromptFormat(Choice):
    AUTO = "auto"
    CHAT = "chat"
    PLAIN = "plain"
    COGNITIVE_MIRRORS = "cognitive_mirrors"  # the study's template, JSON answers


class MetricName(Choice):
    ACCURACY = "accuracy"
    COMET = "comet"
    MINILM_COSINE = "minilm_cosine"
    CHRF = "chrf"
    BLEU_ROUGE_COSINE = "bleu_rouge_cosine"
    COGNITIVE_MIRRORS_ACCURACY = "cognitive_mirrors_accuracy"
    COGNITIVE_MIRRORS_ACCURACY_GOLD = "cognitive_mirrors_accuracy_gold"
    COGNITIVE_MIRRORS_COMET = "cognitive_mirrors_comet"
    ANSWER_LOGPROB = "answer_logprob"  # the logit metrics (metrics.logits): no generation
    LOGIT_DIFF = "logit_diff"
    KL_UNMASKED = "kl_unmasked"

    @property
    def aliases(self) -> tuple[str, ...]:
        return ("minilm",) if self is MetricName.MINILM_COSINE else ()


class ExecutorName(Choice):
    """Where a sweep's generations run (``execution.registry.EXECUTORS``)."""

    LOCAL = "local"
    PLAIN = "plain"
    PACKED = "packed"
    RAY = "ray"


class BackendName(Choice):
    """Which model classes run the model (``models.backends.BACKENDS``)."""

    HOOKED = "hooked"
    BRIDGE = "bridge"


_WHAT = {
    "AttributionMethod": "attribution method",
    "AblationKind": "ablation kind",
    "MaskPositions": "mask positions",
    "SelectionName": "selection",
    "PromptFormat": "prompt format",
    "MetricName": "metric",
    "ExecutorName": "executor",
    "BackendName": "backend",
}
