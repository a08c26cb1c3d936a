"""Probe attribution (``method = "probe"``): the heads whose ``hook_z`` *encodes* which task it runs.

This is the ranking of the Cognitive Mirrors study (Ma et al., NeurIPS 2025; code in
``sihuo-design/CognitiveMirrors``), on TransformerLens' ``hook_z`` (= the head's slice of the
``o_proj`` input the study collects in ``get_activations.py``):

1. *Features* (``get_importance.py: get_head_weight``): each head's ``z`` at one position of every
   prompt of several tasks (the labels are the tasks): ``last`` (the last prompt token),
   ``answer`` (the mean over the tokens of the reference answer, forced-decoded after the prompt:
   the study's ``topk``/``full`` positions are tokens of the model's answer) or ``mean`` (over the
   prompt). With ``layer_mean`` (the study's ``layer_bias=True``) the mean of the layer's heads is
   concatenated to each head's ``z``: ``[example, layer * head, 2 * d_head]``.
2. *Probe* (``FeatureLevelClassifier``): one linear projection to ``proj_dim`` (64) applied to every
   head's feature (shared weights, as in the study), the projections concatenated, then an MLP
   (512 hidden units, ReLU, dropout 0.3) to the task logits; ``kind="linear"`` replaces the MLP by
   one linear layer. Trained with AdamW on a seeded, stratified split; the held-out accuracy and
   the chance level (the held-out share of its largest task) are reported.
3. *Importance* (``compute_feature_importance_per_label``): for the held-out examples of each task,
   gradient x activation of that task's logit w.r.t. each head's projection, averaged over the
   projection's dimensions. The study averages this signed value over examples and sorts by its
   magnitude; here each head's score is the mean of its magnitude over examples (a head that pushes
   some examples towards the label and others away still encodes the label). Ranked by ``abs``.

The study trains 100 epochs at batch size 1 and learning rate 1e-4; the defaults here (40 epochs,
batch 16, 1e-3) reach the same held-out accuracy on the built-in tasks in a fraction of the time.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

import torch
from jaxtyping import Float, Int
from torch import nn

from interp_heads.attribution.inputs import uses_chat
from interp_heads.attribution.patching import run_cached, z_hook_names
from interp_heads.attribution.scores import HeadScores
from interp_heads.errors import InputError
from interp_heads.heads import hook_z
from interp_heads.models.tl_compat import HookedTransformer
from interp_heads.tasks.prompts import render
from interp_heads.tasks.schema import Task

PROBE_POSITIONS = ("last", "answer", "mean")
PROBE_KINDS = ("mlp", "linear")
METRIC = (
    "mean over held-out examples of |grad x activation| of the true task's logit on the head's "
    "{proj_dim}-d projection ({kind} probe on hook_z at position {position!r}; Cognitive Mirrors)"
)


@dataclass
class ProbeData:
    """Per-head features of every example and its task label (index into ``tasks``)."""

    features: Float[torch.Tensor, "example feature d_feat"]
    labels: Int[torch.Tensor, " example"]
    ids: list[str]
    tasks: list[str]


@dataclass
class ProbeSettings:
    """The probe's shape and training (defaults: the study's shape, faster training)."""

    kind: str = "mlp"
    proj_dim: int = 64
    hidden: int = 512
    epochs: int = 40
    lr: float = 1e-3
    batch_size: int = 16
    heldout: float = 0.25
    seed: int = 0

    def __post_init__(self):
        if self.kind not in PROBE_KINDS:
            raise InputError(
                f"unknown probe kind {self.kind!r}; use one of {', '.join(PROBE_KINDS)}"
            )
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


def _rows(model, task: Task, fmt: str, position: str) -> tuple[list[torch.Tensor], list[int]]:
    """Token rows (prompt, plus the answer's tokens for ``answer``) and the answer's length."""
    texts = render(model, [e.prompt for e in task], fmt=fmt)
    chat = uses_chat(model, fmt)
    rows, n_answer = [], []
    for text, ex in zip(texts, task, strict=True):
        row = model.to_tokens(
            text, prepend_bos=model.cfg.default_prepend_bos, move_to_device=False
        )[0]
        n = 0
        if position == "answer":
            ans = ex.answer.strip()
            if not chat and not text[-1:].isspace():
                ans = " " + ans
            toks = model.to_tokens(ans, prepend_bos=False, move_to_device=False)[0]
            if len(toks) == 0:
                raise InputError(f"task {task.name!r}: example {ex.id!r} has an empty answer")
            row, n = torch.cat([row, toks]), len(toks)
        rows.append(row)
        n_answer.append(n)
    return rows, n_answer


@torch.inference_mode()
def _batch_features(model, rows, n_answer, position: str) -> torch.Tensor:
    """``[batch, layer, head, d_head]``: z at the position, or its mean over the chosen tokens."""
    width = max(len(r) for r in rows)
    tokens = torch.full((len(rows), width), model.tokenizer.pad_token_id, dtype=torch.long)
    attn = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        tokens[i, width - len(r) :] = r
        attn[i, width - len(r) :] = 1
    chosen = attn
    if position == "answer":  # the last n_answer positions of each left-padded row
        chosen = attn * (torch.arange(width)[None, :] >= width - torch.tensor(n_answer)[:, None])
    device = model.cfg.device
    cache, _ = run_cached(model, tokens.to(device), attn.to(device), z_hook_names(model))
    z = torch.stack([cache[hook_z(layer)] for layer in range(model.cfg.n_layers)], 1).float().cpu()
    if position == "last":
        return z[:, :, -1]
    w = chosen.float()[:, None, :, None, None]  # [batch, 1, pos, 1, 1]
    return (z * w).sum(2) / w.sum(2)


def head_features(
    model: HookedTransformer,
    tasks: list[Task],
    fmts: Mapping[str, str] | str = "auto",
    *,
    position: str = "answer",
    layer_mean: bool = True,
    batch_size: int = 8,
) -> ProbeData:
    """Every head's ``z`` feature on every example of ``tasks`` (label = the task's index).

    Raises:
        InputError: fewer than two tasks, a task twice, an unknown position.
    """
    if position not in PROBE_POSITIONS:
        raise InputError(
            f"unknown probe position {position!r}; use one of {', '.join(PROBE_POSITIONS)}"
        )
    names = [t.name for t in tasks]
    if len(set(names)) < 2 or len(set(names)) != len(names):
        raise InputError(f"the probe needs two or more distinct tasks (its labels), got {names}")
    feats, labels, ids = [], [], []
    for label, task in enumerate(tasks):
        fmt = fmts if isinstance(fmts, str) else fmts[task.name]
        rows, n_answer = _rows(model, task, fmt, position)
        for start in range(0, len(rows), batch_size):
            sl = slice(start, start + batch_size)
            feats.append(_batch_features(model, rows[sl], n_answer[sl], position))
        labels += [label] * len(task)
        ids += [e.id for e in task]
    z = torch.cat(feats)  # [example, layer, head, d_head]
    if layer_mean:
        z = torch.cat([z, z.mean(2, keepdim=True).expand_as(z)], -1)
    return ProbeData(z.flatten(1, 2), torch.tensor(labels), ids, names)


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


def train_probe(data: ProbeData, train: torch.Tensor, s: ProbeSettings) -> HeadProbe:
    """AdamW on cross-entropy over the training rows (seeded; the global RNG is left as it was)."""
    x, y = data.features[train], data.labels[train]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(s.seed)
        probe = HeadProbe(x.shape[2], x.shape[1], len(data.tasks), s)
        opt = torch.optim.AdamW(probe.parameters(), lr=s.lr)
        loss_fn = nn.CrossEntropyLoss()
        probe.train()
        for _ in range(s.epochs):
            for b in torch.randperm(len(x)).split(s.batch_size):
                opt.zero_grad()
                loss_fn(probe(x[b]), y[b]).backward()
                opt.step()
    return probe.eval()


def accuracy(probe: HeadProbe, data: ProbeData, rows: torch.Tensor) -> float:
    with torch.no_grad():
        pred = probe(data.features[rows]).argmax(-1)
    return float((pred == data.labels[rows]).float().mean())


def importance(probe: HeadProbe, data: ProbeData, rows: torch.Tensor) -> torch.Tensor:
    """``[task, feature]``: mean |grad x activation| of the true task's logit per head projection."""
    out = torch.zeros(len(data.tasks), data.features.shape[1])
    for label in range(len(data.tasks)):
        sel = rows[data.labels[rows] == label]
        proj = probe.feature_proj(data.features[sel]).detach().requires_grad_(True)
        logit = probe.classifier(proj.flatten(1))[:, label].sum()
        (grad,) = torch.autograd.grad(logit, proj)
        out[label] = (grad * proj.detach()).mean(-1).abs().mean(0)
    return out


def probe_heads(
    model: HookedTransformer,
    tasks: list[Task],
    fmts: Mapping[str, str] | str = "auto",
    *,
    position: str = "answer",
    settings: ProbeSettings | None = None,
    layer_mean: bool = True,
    batch_size: int = 8,
) -> dict[str, HeadScores]:
    """Train the probe on ``tasks`` (labels = tasks) and rank every head for each task.

    Returns:
        task name -> ``HeadScores`` (``method="probe"``); ``provenance["probe"]`` holds the held-out
        accuracy, the chance level and the split sizes, the same for every task.
    """
    start = time.perf_counter()
    s = settings or ProbeSettings()
    data = head_features(
        model, tasks, fmts, position=position, layer_mean=layer_mean, batch_size=batch_size
    )
    train, test = split(data.labels, s.heldout, s.seed)
    probe = train_probe(data, train, s)
    counts = torch.bincount(data.labels[test], minlength=len(data.tasks))
    summary = {
        "kind": s.kind,
        "position": position,
        "layer_mean": layer_mean,
        "heldout_accuracy": round(accuracy(probe, data, test), 4),
        "train_accuracy": round(accuracy(probe, data, train), 4),
        "chance": round(float(counts.max()) / len(test), 4),
        "n_train": len(train),
        "n_heldout": len(test),
        "settings": vars(s).copy(),
        "tasks": data.tasks,
    }
    imp = importance(probe, data, test)
    n_layers, n_heads = model.cfg.n_layers, model.cfg.n_heads
    metric = METRIC.format(proj_dim=s.proj_dim, kind=s.kind, position=position)
    seconds = round(time.perf_counter() - start, 3)
    out = {}
    for label, task in enumerate(tasks):
        provenance = {
            "model": dict(getattr(model, "interp_heads_source", {}) or {}),
            "n_layers": n_layers,
            "n_heads": n_heads,
            "n_examples": len(task),
            "example_ids": [e.id for e in task],
            "batch_size": batch_size,
            "fmt": fmts if isinstance(fmts, str) else fmts[task.name],
            "rank_by": "abs",
            "probe": summary,
            "seconds": seconds,
        }
        scores = imp[label].reshape(n_layers, n_heads)
        out[task.name] = HeadScores(scores, "probe", task.name, metric, provenance)
    return out
