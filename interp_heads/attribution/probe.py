"""Probe attribution (``method = "probe"``): the heads whose ``hook_z`` *encodes* which task it runs.

This is the ranking of the Cognitive Mirrors study (Ma et al., NeurIPS 2025; code in
``sihuo-design/CognitiveMirrors``), on TransformerLens' ``hook_z`` (= the head's slice of the
``o_proj`` input the study collects in ``get_activations.py``):

1. *Features* (``get_activations.py``, ``utils.get_llama_activations_pyvene``,
   ``get_importance.py: get_head_weight``): each head's ``z`` on every example, at a position of
   ``attribution.probe_features``: ``generated`` is the study's (the mean over up to five tokens
   of the answer the unmasked model generates in its JSON block); ``answer`` forces the reference
   answer after the prompt instead, ``last`` and ``mean`` read the prompt. With ``layer_mean``
   (the study's ``layer_bias=True``) the mean of the layer's heads is concatenated to each head's
   ``z``: ``[example, layer * head, 2 * d_head]``. Labels: the tasks, or (the study's) the
   examples' cognitive skills, every skill of a CogQA file (``others``: skills not swept).
2. *Probe* (``FeatureLevelClassifier``): one linear projection to ``proj_dim`` (64) applied to every
   head's feature (shared weights, as in the study), the projections concatenated, then an MLP
   (512 hidden units, ReLU, dropout 0.3) to the label logits; ``kind="linear"`` replaces the MLP
   by one linear layer. AdamW on cross-entropy, seeded; the study trains 100 epochs at batch 1 and
   learning rate 1e-4 on its training file (in file order; here shuffled per epoch), the defaults
   here are 40, 16 and 1e-3 (``configs/cognitive_mirrors.toml`` sets the study's).
3. *Importance* (``compute_feature_importance_per_label``): per label, on its rows, gradient x
   activation of that label's logit w.r.t. each head's 64-d projection, averaged over the
   projection's dimensions (signed). The study reads it on its test rows, the ones it then masks
   (``evaluated``; here the rows of each task's eval split, the probe trained on every rank row),
   averages it over them and sorts by the magnitude of that mean (``importance="abs_mean"``). The
   default reads it on a seeded, stratified held-out share of the rank rows and takes the mean of
   its magnitude (``mean_abs``: a head that pushes some examples towards the label and others away
   still encodes the label). Ranked by ``abs``.

The accuracy on the rows the importance is read on is reported against chance, 1 / the number of
labels (and the share of the largest label there), in ``provenance["probe"]``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

import torch
from jaxtyping import Float
from torch import nn

from interp_heads.attribution.probe_features import (
    PROBE_LABELS,
    PROBE_POSITIONS,
    ProbeData,
    head_features,
    skill_of,
)
from interp_heads.attribution.scores import HeadScores
from interp_heads.errors import InputError
from interp_heads.model_info import source_of
from interp_heads.models.tl_compat import HookedTransformer
from interp_heads.tasks.schema import Task

T = TypeVar("T")

__all__ = ["PROBE_POSITIONS", "ProbeData", "ProbeSettings", "head_features", "probe_heads"]

PROBE_KINDS = ("mlp", "linear")
PROBE_IMPORTANCE = ("mean_abs", "abs_mean")
METRIC = {
    "mean_abs": "mean over {rows} rows of |grad x activation|",
    "abs_mean": "|mean over {rows} rows of grad x activation| (Cognitive Mirrors)",
}
METRIC_TAIL = (
    " of the label's logit on the head's {proj_dim}-d projection ({kind} probe on hook_z at "
    "position {position!r}, labels: {labels})"
)


@dataclass
class ProbeSettings:
    """The probe's shape, training, labels and importance (defaults: the study's shape, faster
    training, task labels, mean |grad x act|; the study's own: ``epochs=100, batch_size=1,
    lr=1e-4, labels="skills", importance="abs_mean"``)."""

    kind: str = "mlp"
    proj_dim: int = 64
    hidden: int = 512
    epochs: int = 40
    lr: float = 1e-3
    batch_size: int = 16
    heldout: float = 0.25
    seed: int = 0
    labels: str = "tasks"
    importance: str = "mean_abs"

    def __post_init__(self):
        for what, value, allowed in (
            ("kind", self.kind, PROBE_KINDS),
            ("labels", self.labels, PROBE_LABELS),
            ("importance", self.importance, PROBE_IMPORTANCE),
        ):
            if value not in allowed:
                raise InputError(f"unknown probe {what} {value!r}; use one of {', '.join(allowed)}")
        if not 0 < self.heldout < 1:
            raise InputError(f"probe held-out share must be in (0, 1), got {self.heldout}")


class HeadProbe(nn.Module):
    """Shared per-head projection, concatenated, then an MLP (or one linear layer)."""

    def __init__(self, d_feat: int, n_features: int, n_classes: int, s: ProbeSettings):
        super().__init__()
        self.feature_proj = nn.Linear(d_feat, s.proj_dim)
        width = s.proj_dim * n_features
        if s.kind == "linear":
            self.classifier: nn.Module = nn.Linear(width, n_classes)
        else:
            self.classifier = nn.Sequential(
                nn.Linear(width, s.hidden),
                nn.ReLU(),
                nn.Dropout(0.3),
                nn.Linear(s.hidden, n_classes),
            )

    def forward(self, x: Float[torch.Tensor, "batch feature d_feat"]) -> torch.Tensor:
        return self.classifier(self.feature_proj(x).flatten(1))


def split(labels: torch.Tensor, heldout: float, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Stratified, seeded split: indices (train, held-out); every task keeps one of each when it can."""
    gen = torch.Generator().manual_seed(seed)
    train, test = [], []
    for label in labels.unique():
        idx = (labels == label).nonzero()[:, 0]
        idx = idx[torch.randperm(len(idx), generator=gen)]
        n = min(max(1, round(heldout * len(idx))), len(idx) - 1)
        test.append(idx[:n])
        train.append(idx[n:])
    return torch.cat(train).sort().values, torch.cat(test).sort().values


def flushed_thread(fn: Callable[[], T]) -> T:
    """``fn()`` in a new thread that flushes denormal floats (below 1.2e-38) to 0, and so do the
    intra-op workers it starts: a thread takes its creator's floating-point mode, so torch's
    workers, started by the calling thread before, would not flush (x86 and ARM; elsewhere the
    floats are left as they are).

    AdamW's moments of a weight whose gradient stays 0 for a while (a hidden unit the ReLU or
    the dropout turns off) decay by 0.9 a step into the denormal range, where x86 arithmetic is
    some 100x slower (``bench.speed.bench_probe_train``). Such a moment moves its weight by
    lr x m / (sqrt(v) + eps) < 1e-4 x 1.2e-38 / 1e-8, far below the last bit of any weight the
    probe holds, so its parameters come out the same (measured bitwise on the study's run,
    docs/performance.md).
    """
    out: dict = {}
    n = torch.get_num_threads()

    def run() -> None:
        try:
            torch.set_num_threads(n)  # a new thread starts at torch's default count
            torch.set_flush_denormal(True)
            out["value"] = fn()
        except BaseException as exc:  # handed to the caller below
            out["error"] = exc

    worker = threading.Thread(target=run, name="interp_heads-probe-train")
    worker.start()
    worker.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


def train_probe(data: ProbeData, train: torch.Tensor, s: ProbeSettings) -> HeadProbe:
    """AdamW on cross-entropy over the training rows (seeded; the global RNG is left as it was;
    in a thread that flushes denormal floats to 0, :func:`flushed_thread`)."""
    x, y = data.features[train], data.labels[train]

    def steps() -> HeadProbe:
        torch.manual_seed(s.seed)
        probe = HeadProbe(x.shape[2], x.shape[1], len(data.tasks), s)
        # fused: one pass over each parameter per step instead of about ten (the study's batch-1
        # training is 9,600 steps of an 8.8M-parameter classifier: 72 -> 34 ms a step on 2
        # quiet cores, 21 ms in the flushing thread, bench.speed.bench_probe_train)
        opt = torch.optim.AdamW(probe.parameters(), lr=s.lr, fused=True)
        loss_fn = nn.CrossEntropyLoss()
        probe.train()
        for _ in range(s.epochs):
            for b in torch.randperm(len(x)).split(s.batch_size):
                opt.zero_grad()
                loss_fn(probe(x[b]), y[b]).backward()
                opt.step()
        return probe.eval()

    with torch.random.fork_rng(devices=[]):
        return flushed_thread(steps)


def accuracy(probe: HeadProbe, data: ProbeData, rows: torch.Tensor) -> float:
    with torch.no_grad():
        pred = probe(data.features[rows]).argmax(-1)
    return float((pred == data.labels[rows]).float().mean())


def importance(
    probe: HeadProbe, data: ProbeData, rows: torch.Tensor, how: str = "mean_abs"
) -> torch.Tensor:
    """``[label, feature]``: per label, over its ``rows``, each head projection's grad x
    activation of that label's logit, averaged over the projection's dimensions, then over rows
    of its magnitude (``mean_abs``) or, as the study's ``compute_feature_importance_per_label``,
    the magnitude of its mean (``abs_mean``). A label without rows scores 0 (the study's too)."""
    out = torch.zeros(len(data.tasks), data.features.shape[1])
    for label in range(len(data.tasks)):
        sel = rows[data.labels[rows] == label]
        if len(sel) == 0:
            continue
        proj = probe.feature_proj(data.features[sel]).detach().requires_grad_(True)
        logit = probe.classifier(proj.flatten(1))[:, label].sum()
        (grad,) = torch.autograd.grad(logit, proj)
        gxa = (grad * proj.detach()).mean(-1)  # [row, feature]
        out[label] = gxa.abs().mean(0) if how == "mean_abs" else gxa.mean(0).abs()
    return out


def _summary(probe, data, train, scored, test, s: ProbeSettings, position, layer_mean) -> dict:
    """The probe's accuracy on the rows it is read on, against chance (1 / labels, and the
    share of the largest label there), and its split."""
    counts = torch.bincount(scored.labels[test], minlength=len(data.tasks))
    return {
        "kind": s.kind,
        "position": position,
        "layer_mean": layer_mean,
        "labels": s.labels,
        "importance": s.importance,
        "heldout_accuracy": round(accuracy(probe, scored, test), 4),
        "train_accuracy": round(accuracy(probe, data, train), 4),
        "chance": round(1 / len(data.tasks), 4),
        "majority": round(float(counts.max()) / len(test), 4),
        "n_labels": len(data.tasks),
        "n_train": len(train),
        "n_heldout": len(test),
        "settings": vars(s).copy(),
        "tasks": data.tasks,
    }


def probe_heads(
    model: HookedTransformer,
    tasks: list[Task],
    fmts: Mapping[str, str] | str = "auto",
    *,
    position: str = "answer",
    settings: ProbeSettings | None = None,
    layer_mean: bool = True,
    batch_size: int = 8,
    evaluated: list[Task] | None = None,
    others: list[Task] = (),
    max_new_tokens: int = 32,
) -> dict[str, HeadScores]:
    """Train the probe on ``tasks`` (and ``others``) and rank every head for each of ``tasks``.

    ``evaluated``: the rows (tasks of the same names) its importance and accuracy are read on,
    the study's choice (the rows then masked); the probe trains on every row of ``tasks``. None:
    a seeded, stratified held-out share of them. ``others``: tasks it also trains on but does not
    rank (the skills of a CogQA file not swept, with ``settings.labels = "skills"``).

    Returns:
        task name -> ``HeadScores`` (``method="probe"``); ``provenance["probe"]`` holds the
        held-out accuracy, the chance level (1 / labels) and the split sizes, the same for every
        task.
    """
    start = time.perf_counter()
    s = settings or ProbeSettings()
    feat = {"position": position, "layer_mean": layer_mean, "batch_size": batch_size}
    feat |= {"labels": s.labels, "max_new_tokens": max_new_tokens}
    data = head_features(model, [*tasks, *others], fmts, **feat)
    if evaluated is None:
        (train, test), scored = split(data.labels, s.heldout, s.seed), data
    else:
        train = torch.arange(len(data.labels))
        scored = head_features(model, evaluated, fmts, label_names=data.tasks, **feat)
        test = torch.arange(len(scored.labels))
    probe = train_probe(data, train, s)
    summary = _summary(probe, data, train, scored, test, s, position, layer_mean)
    summary["rows"] = "heldout" if evaluated is None else "evaluated"
    imp = importance(probe, scored, test, s.importance)
    metric = METRIC[s.importance].format(rows=summary["rows"]) + METRIC_TAIL.format(
        proj_dim=s.proj_dim, kind=s.kind, position=position, labels=s.labels
    )
    seconds = round(time.perf_counter() - start, 3)
    out = {}
    for task in tasks:
        label = data.tasks.index(task.name if s.labels == "tasks" else skill_of(task, task[0]))
        provenance = {
            "model": source_of(model),
            "n_layers": model.cfg.n_layers,
            "n_heads": model.cfg.n_heads,
            "n_examples": len(task),
            "example_ids": [e.id for e in task],
            "batch_size": batch_size,
            "fmt": fmts if isinstance(fmts, str) else fmts[task.name],
            "rank_by": "abs",
            "probe": summary,
            "label": data.tasks[label],
            "seconds": seconds,
        }
        scores = imp[label].reshape(model.cfg.n_layers, model.cfg.n_heads)
        out[task.name] = HeadScores(scores, "probe", task.name, metric, provenance)
    return out
