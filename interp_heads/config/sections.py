"""The typed sections of a run's config, validated by pydantic (``interp_heads.config.run_config``).

=============== ===========================================================================
section         keys
=============== ===========================================================================
``model``       model, device, threads, backend
``tasks``       tasks, max_examples, skip, n_rank, n_eval, filter_correct, baseline, fmt
``ranking``     ranking, ranking_task, heads, allow_overlap (a given ranking instead of attribution)
``attribution`` attribution, refine, verify, known_heads, each method's options (``config.options``: ``METHODS.options()``)
``ablation``    ablation, positions, each kind's options (``config.options``: ``KINDS.options()``)
``sweep``       ks, scaled_ks, selections, seeds, elbow, damage_matched, each selection's options (``SELECTIONS.options()``: ``exclude_top``)
``analysis``    analyses, stability_ks, sufficiency, sufficiency_seeds, sufficiency_grid, sufficiency_metrics, sufficiency_search, sufficiency_search_ablation, sufficiency_target, sufficiency_step, sufficiency_patience, sufficiency_upper, sufficiency_resamples (steps after the sweep)
``generation``  max_new_tokens, batch_size, batch_padding, seed, free_form
``metrics``     metrics, reference, each metric's options (``METRICS.options()``: ``comet_model``)
``placement``   executor, n_devices, shared_store, each executor's options (``EXECUTORS.options()``: ``ray_address``, ``n_workers``) (where work runs and what it reuses; not in the digest)
=============== ===========================================================================

Each field carries its type, bounds, default and one-line help; :class:`~interp_heads.config.run_config.RunConfig`
is their union and the CLI's flags are built from the same fields (``config.flags.cli_flag``).
Which keys the config digest leaves out is fixed in :mod:`interp_heads.config.digest`.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from interp_heads.arguments import torch_seed
from interp_heads.attribution.methods import METHODS
from interp_heads.choices import MaskPositions, PromptFormat
from interp_heads.execution.registry import EXECUTORS
from interp_heads.interventions.kinds import KINDS
from interp_heads.interventions.selections import SELECTIONS
from interp_heads.metrics.registry import METRICS
from interp_heads.models.backends import BACKENDS
from interp_heads.tasks.schema import BUILTIN_TASKS


def _parsed(enum):
    return BeforeValidator(lambda v: enum.parse(v) if isinstance(v, str) else v)


def _registered(registry):
    """A name of ``registry`` (a built-in, or one a user registered)."""
    return BeforeValidator(registry.canonical)


Pos = Annotated[int, Field(gt=0)]
MAX_SEEDS = 1000  # random draws per selection and k; more is a typo, not an experiment
NonNeg = Annotated[int, Field(ge=0)]
Fraction = Annotated[float, Field(gt=0, le=1)]


class Section(BaseModel):
    model_config = ConfigDict(
        extra="forbid", validate_assignment=True, strict=True, allow_inf_nan=False
    )  # nan or inf (TOML allows both) is never a setting


class ModelSection(Section):
    model: str = Field(
        "smollm2-135m", min_length=1, description="model spec (smollm2-135m: the embedded SmolLM2)"
    )
    device: str | None = Field(None, description="cpu, cuda, cuda:N, mps (None: CUDA when present)")
    threads: Pos | None = Field(
        None, description="torch CPU threads (None: cores shared among running interp-heads)"
    )
    backend: Annotated[str, _registered(BACKENDS)] = Field(
        "hooked",
        description="hooked (HookedTransformer, TransformerLens 2.18) or bridge "
        "(TransformerBridge around the HF model, TransformerLens 4: make setup-tl4)",
    )


def _store_folder(path: str | None) -> str | None:
    """A shared store is a real folder (made when absent): a file or a link there is refused."""
    from interp_heads.store.shared import not_a_folder

    if path is not None and (problem := not_a_folder(path)) is not None:
        raise ValueError(
            f"{path!r} is {problem} (a shared store is a real folder, made when absent)"
        )
    return path


class PlacementSection(Section):
    """Where work runs, not what it computes: not part of the config digest."""

    executor: Annotated[str, _registered(EXECUTORS)] = Field(
        "local",
        description="where the sweep's generations run: local (this process; packed batches on "
        "CUDA), plain, packed, or ray (Ray actors)",
    )
    n_devices: Pos = Field(1, description="GPUs the model's layers are split over")
    shared_store: Annotated[str | None, AfterValidator(_store_folder)] = Field(
        None,
        description="folder of generations shared between runs: a condition found there is not "
        "generated again (interp-heads study uses <runs>/shared; None: none)",
    )


class TasksSection(Section):
    tasks: list[str] = Field(
        default_factory=lambda: list(BUILTIN_TASKS),
        min_length=1,
        description="built-in task names or task JSONL files",
    )
    max_examples: Pos | None = Field(None, description="read at most N examples per task")
    skip: NonNeg = Field(0, description="skip the first N examples of each task file")
    n_rank: Pos = Field(24, description="rank on the first N correctly answered examples")
    n_eval: Pos = Field(100, description="evaluate at most N (correctly answered) examples")
    filter_correct: bool = Field(True, description="keep only correctly answered examples")
    baseline: Literal["all", "needed"] = Field(
        "all",
        description="all: answer every example unmasked (baseline.csv: each task's accuracy); "
        "needed: only until enough examples are answered correctly (attribute, ablate)",
    )
    fmt: Annotated[PromptFormat, _parsed(PromptFormat)] | None = Field(
        None, description="prompt format (None: the task's own, else measured)"
    )


class RankingSection(Section):
    """A ranking made elsewhere (``attribute``, an earlier run, or heads by hand): the run masks
    its heads instead of ranking them itself."""

    ranking: str | None = Field(
        None, description="run folder, ranking.csv or attribution.parquet whose ranking to mask"
    )
    ranking_task: str | None = Field(
        None,
        description="use the ranking made on this task (None: each task's own; another task's "
        "on purpose)",
    )
    heads: list[str] | None = Field(
        None, min_length=1, description="heads to mask, most important first, e.g. L3H2,L5H0"
    )
    allow_overlap: bool = Field(
        False,
        description="also evaluate the examples the ranking was computed on (left out by default)",
    )
    allow_other_model: bool = Field(
        False, description="mask a ranking made on another model (refused by default)"
    )
    allow_other_task: bool = Field(
        False,
        description="mask a ranking made on another file of the same task (refused by default)",
    )


class AttributionSection(Section):
    attribution: Annotated[str, _registered(METHODS)] = Field(
        "auto",
        description="auto (atp with corrupted prompts, else ablation_atp), exact, atp, "
        "ablation_atp, gradxact, headmask, mean_ablation or probe (all tasks together)",
    )
    refine: Pos | None = Field(None, description="re-score the top N heads exactly")
    verify: NonNeg = Field(
        8,
        description="check the ranking's top N heads and N random others by their exact "
        "mean-ablation drop; the verdict goes to the manifest and the report (0: off)",
    )
    known_heads: bool = Field(
        True,
        description="detect known head kinds (previous-token, duplicate-token, induction, "
        "successor) and mark them on the heatmaps (false: skip the step)",
    )


class AblationSection(Section):
    ablation: Annotated[str, _registered(KINDS)] = Field(
        "mean",
        description="ablation kind: what a masked head's hook_z becomes (zero, mean, resample, "
        "scale)",
    )
    positions: Annotated[MaskPositions, _parsed(MaskPositions)] = Field(
        MaskPositions.ALL,
        description="where the mask acts: all; last (position -1 of each pass); generated (the "
        "prompt's pass unmasked, each generated position masked: the Cognitive Mirrors scope)",
    )


class SweepSection(Section):
    ks: list[Pos] = Field(default_factory=lambda: [16, 32, 64, 128], min_length=1,
                          description="numbers of masked heads")  # fmt: skip
    scaled_ks: list[Fraction] | None = Field(
        None, description="fractions of all heads, added to ks"
    )
    selections: list[Annotated[str, _registered(SELECTIONS)]] = Field(
        default_factory=lambda: ["topk", "randomk", "layermatched"],
        min_length=1,
        description="which heads each condition masks, any registered selection: "
        + ", ".join(SELECTIONS.names()),
    )
    seeds: Pos = Field(5, le=MAX_SEEDS, description="random draws per random selection and k")
    elbow: bool = Field(
        False,
        description="also mask each task's elbow k: the point of its sorted importances farthest "
        "from the first-to-last chord (Cognitive Mirrors' find_elbow_point)",
    )
    damage_matched: bool = Field(
        False,
        description="also report each task's damage-matched k: the largest k of the grid at "
        "which RandomK keeps at least 0.8 x the unmasked score (needs randomk)",
    )


class AnalysisSection(Section):
    """Which heads, beyond the sweep: steps a run adds after its tables (``make heads``)."""

    analyses: list[Literal["specificity", "stability"]] = Field(
        default_factory=list,
        description="specificity: every task's TopK masked on every task (heads/specificity.csv); "
        "stability: each ranking re-ranked on two halves of its examples (heads/stability.csv)",
    )
    stability_ks: list[Pos] | None = Field(None, description="the k at which the halves' TopK are "
                                           "compared (None: the run's ks)")  # fmt: skip
    sufficiency: bool = Field(
        False,
        description="also keep only each ranking's TopK (the rest ablated) and k random heads at "
        "MIB's kept fractions and the run's ks: faithfulness, CPR, CMD, minimal head set",
    )
    sufficiency_seeds: Pos = Field(3, le=MAX_SEEDS, description="random kept sets per k")
    sufficiency_grid: Literal["mib", "ks"] = Field("mib", description="the kept k swept: MIB's "
        "counts, a finer top and the run's ks (mib), or only 0, the run's ks and every head (ks: "
        "the verdicts at ks, no curve area or minimal k)")  # fmt: skip
    sufficiency_metrics: list[Annotated[str, _registered(METRICS)]] = Field(
        default_factory=lambda: ["accuracy", "answer_logprob", "kl_unmasked"],
        min_length=1,
        description="what the sufficiency curves measure (accuracy: the minimal head set)",
    )
    sufficiency_search: bool = Field(False, description="with sufficiency: search each task's rank "
        "examples for a small sufficient head set, verified on its eval examples")  # fmt: skip
    sufficiency_search_ablation: str | None = Field(None, description="what the search ablates "
        "heads not kept with (None: the run's ablation; counterfactual: each example's corrupted "
        "prompt, verified on log-prob only)")  # fmt: skip
    sufficiency_target: Fraction = Field(0.9, description="f on log-prob a searched set keeps")
    sufficiency_step: Fraction = Field(0.1, description="share of kept heads a search step removes")
    sufficiency_patience: NonNeg = Field(8, description="single heads whose removal fails that a "
                                         "search keeps for good before it stops (0: it stops at "
                                         "the first)")  # fmt: skip
    sufficiency_upper: Annotated[float, Field(ge=1)] | None = Field(
        1.1, description="the top of the band a searched set's f must fall in (over-recovery "
        "above it; None: f >= sufficiency_target only)")  # fmt: skip
    sufficiency_resamples: NonNeg = Field(0, description="bootstrap resamples of the searched "
                                          "examples the same search runs on again: the sizes "
                                          "it finds there (each costs one whole search on "
                                          "its distinct examples)")  # fmt: skip


class GenerationSection(Section):
    max_new_tokens: Pos = Field(16, description="tokens generated per answer")
    batch_size: Pos = Field(16, description="examples per forward pass")
    batch_padding: NonNeg | None = Field(None, description="most padding positions a sweep's "
                                         "generation batch holds (None: batch_size prompts "
                                         "each, whatever their lengths; docs/performance.md)")  # fmt: skip
    seed: Annotated[int, AfterValidator(torch_seed)] = Field(0, description="torch seed of the run")
    free_form: bool = Field(
        False,
        description="generate max_new_tokens without the first-line stop and score whole answers",
    )


class MetricsSection(Section):
    metrics: list[Annotated[str, _registered(METRICS)]] = Field(
        default_factory=lambda: ["accuracy", "comet"],
        min_length=1,
        description="accuracy, comet, chrf, minilm_cosine, bleu_rouge_cosine; answer_logprob, "
        "logit_diff, kl_unmasked (the masked model's logits, one forward pass per condition)",
    )
    reference: Literal["gold", "unmasked"] = Field(
        "gold",
        description="what COMET, minilm_cosine and chrf score against: the gold answer, or the "
        "unmasked model's answer to the same prompt (Cognitive Mirrors)",
    )


SECTIONS: dict[str, type[Section]] = {
    "model": ModelSection,
    "tasks": TasksSection,
    "ranking": RankingSection,
    "attribution": AttributionSection,
    "ablation": AblationSection,
    "sweep": SweepSection,
    "analysis": AnalysisSection,
    "generation": GenerationSection,
    "metrics": MetricsSection,
    "placement": PlacementSection,
}
# every field of every section by name (the CLI's flags look their field up here)
FIELDS = {name: info for s in SECTIONS.values() for name, info in s.model_fields.items()}
# the placement section's own fields (``config.options.placement_keys`` adds the executors' options)
PLACEMENT = tuple(PlacementSection.model_fields)
