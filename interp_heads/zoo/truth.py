"""Exhaustive truth: every kept head set of a zoo model evaluated under teacher forcing.

A subset is a bitmask over the flat head index ``layer * n_heads + head`` (bit set: the head is
kept); every head not kept is ablated on ``blocks.{l}.attn.hook_z`` by a registered ablation kind
(``interventions.kinds``: its own values and rewrite, computed on the evaluated prompts) or by
``counterfactual`` (its ``z`` on the example's own corrupted prompt, MIB's choice, as the
sufficient-set search defines it). Many subsets run in one forward pass: the prompts are tiled
once per subset and each row's ``z`` is ``keep * z + (1 - keep) * ablated z`` with that row's keep
mask. ``resample`` draws one other prompt per head once (``interventions.masks.rewrites`` of every
head, ``seed``), so each subset ablates a head with the same draw.

Per subset: the mean over prompts of the answer's log-prob, its logit and the accuracy (argmax at
the last position). More than :data:`MAX_SUBSETS` subsets is refused; ``max_size`` enumerates
only the kept sets of at most that many heads (and every head kept, the reference).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from itertools import combinations

import numpy as np
import torch

from interp_heads.errors import InputError

MAX_SUBSETS = 2**20
COUNTERFACTUAL = "counterfactual"
KINDS = ("zero", "mean", "position_mean", "resample", COUNTERFACTUAL)
METRICS = ("logprob", "logit", "accuracy")


@dataclass
class Enumeration:
    """Every enumerated kept set (``masks``: bitmasks) with its metrics' means over the prompts
    (``values[metric]``, aligned with ``masks``); ``complete``: every subset was enumerated."""

    kind: str
    n_layers: int
    n_heads: int
    masks: np.ndarray
    values: dict[str, np.ndarray]
    n_prompts: int
    complete: bool
    max_size: int | None = None
    index: dict[int, int] = field(default_factory=dict, repr=False)

    def __post_init__(self):
        self.index = {int(m): i for i, m in enumerate(self.masks)}

    @property
    def n_total(self) -> int:
        return self.n_layers * self.n_heads

    def value(self, mask: int, metric: str = "logprob") -> float:
        return float(self.values[metric][self.index[int(mask)]])

    @property
    def sizes(self) -> np.ndarray:
        return np.array([bin(int(m)).count("1") for m in self.masks])


def subset_masks(n_total: int, max_size: int | None = None) -> list[int]:
    """The kept sets to enumerate, smallest first: all ``2 ** n_total``, or those of at most
    ``max_size`` heads plus every head; InputError past :data:`MAX_SUBSETS`."""
    sizes = range(n_total + 1) if max_size is None else range(min(max_size, n_total) + 1)
    count = sum(math.comb(n_total, k) for k in sizes)
    if count > MAX_SUBSETS:
        raise InputError(
            f"{count} head subsets of {n_total} heads exceed the truth's limit of {MAX_SUBSETS} "
            "(2^20): pass max_size to enumerate the kept sets up to a size"
        )
    out = [sum(1 << i for i in c) for k in sizes for c in combinations(range(n_total), k)]
    full = (1 << n_total) - 1
    return out if full in out else [*out, full]


def keep_matrix(masks, n_layers: int, n_heads: int) -> torch.Tensor:
    """``[subset, layer, head]`` 1.0 where the subset keeps the head."""
    bits = torch.tensor([[(int(m) >> i) & 1 for i in range(n_layers * n_heads)] for m in masks])
    return bits.float().reshape(len(masks), n_layers, n_heads)


def ablated_z(model, batch, kind: str, prompts, seed: int = 0) -> dict[int, torch.Tensor]:
    """Per layer the ablated ``z`` of every head on the batch's clean prompts
    (``[prompt, pos, head, d_head]``): the kind's rewrite of the clean ``z`` with the kind's values
    from ``prompts`` (the batch's prompt strings), or the ``z`` of the corrupted prompt
    (``counterfactual``)."""
    from interp_heads.interventions.kinds import get_kind
    from interp_heads.interventions.masks import rewrites

    n_layers, n_heads = model.cfg.n_layers, model.cfg.n_heads
    names = [f"blocks.{layer}.attn.hook_z" for layer in range(n_layers)]
    with torch.no_grad():
        _, clean = model.run_with_cache(batch.clean, names_filter=lambda n: n in names)
        if kind == COUNTERFACTUAL:
            if batch.corrupted is None:
                raise InputError("counterfactual truth needs the task's corrupted prompts")
            _, corr = model.run_with_cache(batch.corrupted, names_filter=lambda n: n in names)
            return {layer: corr[names[layer]] for layer in range(n_layers)}
    if kind not in KINDS:
        raise InputError(f"truth ablation must be one of {', '.join(KINDS)}, got {kind!r}")
    ablation = get_kind(kind)
    values = ablation.values(model, list(prompts))
    every = [(layer, head) for layer in range(n_layers) for head in range(n_heads)]
    plan = rewrites(every, ablation, values, seed)
    return {layer: plan[layer][1].apply(clean[names[layer]]) for layer in range(n_layers)}


def _chunks(masks: list[int], size: int) -> Iterator[list[int]]:
    for i in range(0, len(masks), size):
        yield masks[i : i + size]


def subset_metrics(model, batch, keep: torch.Tensor, ablated: dict) -> dict[str, torch.Tensor]:
    """Per subset (rows of ``keep``, ``[subset, layer, head]``) the mean over the batch's prompts
    of each metric in :data:`METRICS`, all subsets in one forward pass."""
    return {m: v.mean(1) for m, v in prompt_metrics(model, batch, keep, ablated).items()}


def prompt_metrics(model, batch, keep: torch.Tensor, ablated: dict) -> dict[str, torch.Tensor]:
    """Per subset and prompt (``[subset, prompt]``) each metric in :data:`METRICS`, all subsets
    in one forward pass."""
    n, s = batch.clean.shape[0], keep.shape[0]
    tokens = batch.clean.repeat(s, 1)  # subset-major: row j * n + i is subset j, prompt i
    rows = keep.repeat_interleave(n, dim=0)  # [s * n, layer, head]

    def hook(z, hook, layer):
        k = rows[:, layer][:, None, :, None].to(z.dtype)
        return k * z + (1 - k) * ablated[layer].repeat(s, 1, 1, 1).to(z.dtype)

    hooks = [(f"blocks.{layer}.attn.hook_z", partial(hook, layer=layer))
             for layer in range(model.cfg.n_layers)]  # fmt: skip
    with torch.no_grad():
        resid = model.run_with_hooks(tokens, fwd_hooks=hooks, stop_at_layer=model.cfg.n_layers)
        logits = model.unembed(model.ln_final(resid[:, -1:]))[:, 0].float()
    answer = batch.answer.repeat(s)
    logp = logits.log_softmax(-1).gather(-1, answer[:, None])[:, 0]
    logit = logits.gather(-1, answer[:, None])[:, 0]
    hit = (logits.argmax(-1) == answer).float()
    return {m: v.reshape(s, n) for m, v in zip(METRICS, (logp, logit, hit), strict=True)}


def truth_batch(model, task):
    """The task as one unpadded batch with its corrupted prompts, in the task's order."""
    from interp_heads.attribution.inputs import make_batches

    (batch,) = make_batches(model, task, batch_size=len(task), fmt="plain", corrupted=True)
    if not bool(batch.mask.all()) or batch.ids != [e.id for e in task]:
        raise InputError("the truth enumerates prompts of one token length (no padding)")
    return batch


def enumerate_subsets(
    model, task, kind: str, *, max_size: int | None = None, seed: int = 0, rows: int = 16384,
) -> Enumeration:  # fmt: skip
    """Every kept set's metrics under ``kind`` on ``task``'s prompts (one token length, with
    corrupted prompts), ``rows`` prompt rows per forward pass."""
    batch = truth_batch(model, task)
    n_layers, n_heads = model.cfg.n_layers, model.cfg.n_heads
    masks = subset_masks(n_layers * n_heads, max_size)
    ablated = ablated_z(model, batch, kind, [e.prompt for e in task], seed)
    per = max(1, rows // len(batch))
    out = {m: [] for m in METRICS}
    for part in _chunks(masks, per):
        got = subset_metrics(model, batch, keep_matrix(part, n_layers, n_heads), ablated)
        for m in METRICS:
            out[m].append(got[m].numpy())
    values = {m: np.concatenate(v) for m, v in out.items()}
    return Enumeration(kind, n_layers, n_heads, np.array(masks, dtype=np.int64), values,
                       len(batch), max_size is None, max_size)  # fmt: skip
