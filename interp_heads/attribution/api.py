"""``attribute_heads``: rank every attention head by how much a task depends on it."""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import time

import torch

from interp_heads.attribution.gradients import (
    ablation_atp_scores,
    atp_scores,
    gradxact_scores,
    headmask_scores,
)
from interp_heads.attribution.inputs import make_batches
from interp_heads.attribution.patching import exact_scores, mean_ablation_scores
from interp_heads.attribution.paths import ablation_ig_scores
from interp_heads.attribution.retrieval import retrieval_scores
from interp_heads.attribution.scores import HeadScores
from interp_heads.attribution.softmax_atp import ablation_softmax_scores
from interp_heads.attribution.verify import verify_ranking
from interp_heads.errors import InputError
from interp_heads.tasks.schema import Task
from interp_heads.tl_compat import HookedTransformer
from interp_heads.vocab import MEAN_REFINED, AttributionMethod, PromptFormat

METHODS: tuple[str, ...] = AttributionMethod.values()
NEEDS_CORRUPTED = {"exact", "atp"}
# Methods that estimate the drop caused by the sweep's own intervention: rank by signed score
# (largest drop first), so that TopK never picks heads whose ablation *helps* the task.
SIGNED = {"ablation_atp", "ablation_ig", "mean_ablation", "retrieval_score"}
METRICS = {
    "exact": "normalised logit diff (clean=1, corrupted=0) after patching the clean head into the corrupted run",
    "atp": "attribution patching estimate of the normalised logit diff (grad x (clean z - corrupted z))",
    "gradxact": "sum over pos, d_head of z * d log p(answer first token)/dz on clean prompts",
    "headmask": "mean over examples of |dL/dmask| (L = -log p(answer first token)), Michel et al. 2019",
    "ablation_atp": "first-order estimate of the drop of log p(answer first token) when the head's z "
    "is replaced by its {kind} ablation value (grad x (z - replacement))",
    "ablation_ig": "integrated gradients of log p(answer first token) along z -> task mean, all heads "
    "together ({steps} midpoint steps)",
    "retrieval_score": "share of needle tokens the head copy-pastes (its arg-max attention is on the "
    "needle token being produced), Wu et al. 2024; retrieval heads: >= 0.1",
}


def default_method(task: Task) -> str:
    """``atp`` when the task has corrupted prompts, else ``ablation_atp`` (no corrupted prompts)."""
    return "atp" if task.has_corrupted else "ablation_atp"


def _versions() -> dict[str, str]:
    out = {}
    for pkg in ("interp_heads", "torch", "transformer-lens", "transformers"):
        try:
            out[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            out[pkg] = "unknown"
    return out


def attribute_heads(
    model: HookedTransformer,
    task: Task,
    method: AttributionMethod | str = "auto",
    *,
    n_examples: int | None = None,
    batch_size: int = 8,
    refine: int | None = None,
    fmt: PromptFormat | str | None = None,
    max_rows: int = 128,
    ablation: str = "mean",
    seed: int = 0,
    exact_layers: int | None = None,
    steps: int = 8,
    verify: int | None = None,
    rivals: int = 0,
) -> HeadScores:
    """Score every head ``(layer, head)`` of ``model`` on ``task`` (all methods act on ``hook_z``).

    Args:
        model: a HookedTransformer (grouped-query attention is fine: ``hook_z`` is per query head).
        task: the task; ``exact``, ``atp`` and ``refine`` need corrupted prompts.
        method: ``exact`` (activation patching, clean -> corrupted), ``atp`` (attribution
            patching), ``ablation_atp`` (attribution patching against the ablation baseline,
            clean only: estimates the sweep's own intervention), ``gradxact`` (grad x
            activation, clean only), ``headmask`` (Michel et al. 2019), ``mean_ablation``
            (exact effect of replacing a head by its task mean), ``retrieval_score`` (Wu et al.
            2024: how often the head copies the needle token it attends to, needle tasks only)
            or ``auto`` (the default:
            ``atp`` when the task has corrupted prompts, else ``ablation_atp``).
        n_examples: use the task's first ``n`` examples (default all).
        batch_size: examples per forward pass.
        refine: re-score the top ``refine`` heads of ``method`` exactly (``exact`` patching; for
            ``ablation_atp``, exact ``mean_ablation`` on the same log-prob scale); those heads rank
            first (by their exact score), the others keep their cheap scores and order below them.
        fmt: prompt format (``"auto"``, ``"chat"``, ``"plain"``), as in ``prompts.render``;
            None (default): the task's own format (``task.fmt``; built-in tasks are ``"plain"``).
        max_rows: cap on heads x examples per patched forward pass (``exact``, ``mean_ablation``).
        ablation: the ablation kind ``ablation_atp`` estimates (``mean``, ``zero``, ``resample``).
        seed: seeds the resample partners of ``ablation_atp``.
        exact_layers: ``ablation_atp`` only: score the heads of the first ``exact_layers`` layers
            by exact ``mean_ablation`` (same log-prob scale) instead of the first-order estimate,
            which fails there: on the inference task it put L0H6 at 0.035 where its exact drop is
            2.35, the largest of all heads (``docs/method.md``). None (default): 1 for
            ``ablation_atp`` with ``ablation="mean"``, else 0. Unlike ``refine``, these heads are
            ranked by their score among the others.
        steps: ``ablation_ig`` only: integration steps (one forward + backward pass each).
        rivals: ``ablation_atp`` only: linearise the logits of the answer and its ``rivals``
            strongest competitors instead of log p(answer), and take the log-softmax exactly
            (``attribution.softmax_atp``: holds where the softmax saturates; ``rivals + 1`` more
            backward passes). 0 (default): plain first order.
        verify: check the finished ranking's top ``verify`` heads and ``verify`` random others
            by their exact mean-ablation drop (``attribution.verify``), reusing the exact scores
            ``exact_layers`` and ``refine`` made; the result is ``provenance["verification"]``.

    Returns:
        HeadScores with ``provenance`` (model, examples, versions, seconds, date).
    """
    if method not in METHODS:
        raise InputError(f"unknown method {method!r}: use one of {', '.join(METHODS)}")
    if method == "probe":
        raise InputError(
            "method 'probe' ranks heads on several tasks together: use "
            "attribution.probe.probe_heads(model, tasks) or a run with two or more tasks"
        )
    start = time.perf_counter()
    if method == "auto":
        method = default_method(task)
    fmt = fmt or getattr(task, "fmt", None) or "auto"
    ablation_refine = method == "ablation_atp"
    mean_refine = method in MEAN_REFINED
    need_corr = (
        method in NEEDS_CORRUPTED
        or (refine is not None and not mean_refine)
        or (method == "mean_ablation" and task.has_corrupted)
    )
    if ablation_refine and refine is not None and ablation != "mean":
        raise InputError(
            "refine with ablation_atp confirms heads by exact mean ablation: use ablation='mean'"
        )
    if method == "ablation_ig" and ablation != "mean":
        raise ValueError("ablation_ig integrates along z -> task mean: use ablation='mean'")
    if exact_layers is None:
        exact_layers = 1 if ablation_refine and ablation == "mean" else 0
    if exact_layers and not (ablation_refine and ablation == "mean"):
        raise InputError(
            "exact_layers scores heads by exact mean ablation: it needs method='ablation_atp' "
            "and ablation='mean'"
        )
    if rivals and method != "ablation_atp":
        raise InputError(f"rivals refines the ablation_atp estimate; method {method!r} has none")
    if not 0 <= rivals < model.cfg.d_vocab:
        raise InputError(f"rivals must be in 0..{model.cfg.d_vocab - 1}, got {rivals}")
    if not 0 <= exact_layers <= model.cfg.n_layers:
        raise InputError(f"exact_layers must be in 0..{model.cfg.n_layers}, got {exact_layers}")
    if need_corr and not task.has_corrupted:
        raise InputError(
            f"method {method!r}{' with refine' if refine else ''} needs corrupted prompts; task {task.name!r} has none "
            "(use 'ablation_atp', the default for such tasks, or 'mean_ablation', 'gradxact', 'headmask')"
        )
    batches = make_batches(
        model, task, n_examples=n_examples, batch_size=batch_size, fmt=fmt, corrupted=need_corr
    )
    metric = METRICS.get(method, "")
    per: list[torch.Tensor] = []  # per-example scores [example layer head]: split-half stability
    if method == "exact":
        scores = exact_scores(model, batches, max_rows=max_rows, per_example=per)
    elif method == "atp":
        scores = atp_scores(model, batches, per_example=per)
    elif method == "ablation_atp":
        if rivals:
            scores = ablation_softmax_scores(
                model, batches, ablation, rivals=rivals, seed=seed, per_example=per
            )
        else:
            scores = ablation_atp_scores(model, batches, ablation, seed=seed, per_example=per)
        metric = METRICS["ablation_atp"].format(kind=ablation)
        if rivals:
            metric += (
                f"; linearised in the logits of the answer and {rivals} rivals, exact log-softmax"
            )
        if exact_layers:
            first = [(layer, h) for layer in range(exact_layers) for h in range(model.cfg.n_heads)]
            sub: list[torch.Tensor] = []
            exact, _ = mean_ablation_scores(
                model, batches, heads=first, max_rows=max_rows, metric="logprob", per_example=sub
            )
            scores[:exact_layers] = exact[:exact_layers]
            per[0][:, :exact_layers] = torch.cat(sub)[:, :exact_layers]
            metric += f"; layers < {exact_layers}: the exact drop (mean ablation)"
    elif method == "ablation_ig":
        scores = ablation_ig_scores(model, batches, steps, per_example=per)
        metric = METRICS["ablation_ig"].format(steps=steps)
    elif method == "gradxact":
        scores = gradxact_scores(model, batches, per_example=per)
    elif method == "headmask":
        scores = headmask_scores(model, batches, per_example=per)
    elif method == "retrieval_score":
        scores, _ = retrieval_scores(
            model, task.subset(ids=[i for b in batches for i in b.ids]), fmt, per_example=per
        )
    else:
        scores, metric = mean_ablation_scores(model, batches, max_rows=max_rows, per_example=per)
        metric = f"{metric} when the head's z is replaced by its task mean (all non-pad positions)"
    per_example = torch.cat(per)
    refined = None
    name = method
    if refine is not None and method != "exact":
        cheap = HeadScores(scores, method, task.name)
        heads = cheap.top(refine, "signed" if method in SIGNED else "abs")
        refined = torch.zeros_like(scores, dtype=torch.bool)
        for layer, head in heads:
            refined[layer, head] = True
        todo = [(layer, h) for layer, h in heads if layer >= exact_layers]  # others: exact already
        if todo:
            sub: list[torch.Tensor] = []
            if mean_refine:
                exact, _ = mean_ablation_scores(
                    model, batches, heads=todo, max_rows=max_rows, metric="logprob", per_example=sub
                )
            else:
                exact = exact_scores(model, batches, heads=todo, max_rows=max_rows, per_example=sub)
            exact_per = torch.cat(sub)
            for layer, head in todo:
                scores[layer, head] = exact[layer, head]
                per_example[:, layer, head] = exact_per[:, layer, head]
        if mean_refine:
            name = f"{method}+mean_ablation@{refine}"
            metric = (
                f"top {refine}: exact answer log-prob drop under mean ablation; others: {metric}"
            )
        else:
            name = f"{method}+exact@{refine}"
            metric = f"top {refine}: {METRICS['exact']}; others: {metric}"
    from interp_heads.stability import split_record  # imports HeadScores from this package

    ids = [i for b in batches for i in b.ids]
    provenance = {
        "model": dict(getattr(model, "interp_heads_source", {}) or {}),
        "n_layers": model.cfg.n_layers,
        "n_heads": model.cfg.n_heads,
        "n_examples": len(ids),
        "example_ids": ids,
        "batch_size": batch_size,
        "fmt": fmt,
        "refine": refine,
        "ablation": ablation if mean_refine else None,
        "exact_layers": exact_layers,
        "rank_by": "signed" if method in SIGNED else "abs",
        "versions": _versions(),
        "split_half": split_record(per_example),
    }
    if method == "ablation_ig":
        provenance["steps"] = steps
    if rivals:
        provenance["rivals"] = rivals
    out = HeadScores(scores, name, task.name, metric, provenance, refined)
    if verify:
        provenance["verification"] = verify_ranking(model, batches, out, verify, max_rows=max_rows)
    provenance["seconds"] = round(time.perf_counter() - start, 3)
    provenance["date"] = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    return out
