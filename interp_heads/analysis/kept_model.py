"""The model with a set of heads ablated, as the head search measures it (``analysis.head_search``).

:class:`KeptModel` rewrites every removed head's ``hook_z`` with a registered ablation kind (or
each example's corrupted prompt) and gives m, the mean log-probability of the answer's first
token, per kept set; each kept head's estimated cost (attribution patching on the kept model) is
taken from the same passes only when asked (:class:`Trial`), so a trial the search rejects costs
forward passes only. A batch may count its rows several times (``Batch.weight``: a bootstrap
resample's repeated examples run once).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from interp_heads.attribution.gradients import ZPass, z_forward
from interp_heads.attribution.inputs import Batch, answer_logprob
from interp_heads.errors import InputError
from interp_heads.heads import heads_by_layer

# the share of the free memory a trial's held graphs may take: keeping a graph only saves running
# its forward pass again, so it leaves room to the jobs beside it (on the 24 GB machine beside a
# study, retrieval's searched batches, about 8 GB each, were held two at a time at 16 GB with
# FRACTION's 95%)
HOLD_SHARE = 0.5
# what the search replaces a removed head's z with: registered kinds, and each example's own
# corrupted prompt (MIB's counterfactual; teacher-forced only, see KeptModel)
ABLATIONS = ("mean", "position_mean", "resample", "counterfactual")
COUNTERFACTUAL = "counterfactual"


class KeptModel:
    """The model with a set of heads ablated: exact m and each kept head's estimated cost.

    A removed head's ``z`` is rewritten by the registered ablation kind itself
    (``interventions.masks.rewrites``, as every sweep masks), from values computed on the searched
    prompts: ``mean`` one pooled mean per head; ``position_mean`` a mean per position counted from
    the end of the prompt (the batches are left-padded, so a pass's last position is every
    prompt's last token); ``resample`` each head's mean over one other searched prompt, drawn
    (``seed``) per head for each trial's set as ``mask_heads`` draws it. ``counterfactual``
    (MIB's choice) is not a sweep kind: a removed head's ``z`` at each position is its ``z`` on
    the example's own corrupted prompt (same token length), so it needs batches made with
    ``corrupted=True`` and exists only for these teacher-forced passes, not for generation.
    """

    def __init__(self, model, batches: Sequence[Batch], ablation: str = "mean", seed: int = 0):
        from interp_heads.interventions.kinds import get_kind

        if ablation not in ABLATIONS:
            raise InputError(f"the search ablates with one of {ABLATIONS}, got {ablation!r}")
        self.model, self.batches, self.seed = model, list(batches), seed
        cfg = model.cfg
        self.shape = (cfg.n_layers, cfg.n_heads)
        if ablation == COUNTERFACTUAL:
            if any(b.corrupted is None for b in self.batches):
                raise InputError(
                    "counterfactual ablation needs each example's corrupted prompt "
                    "(make_batches(..., corrupted=True)); the task has none"
                )
            self.kind, self.values = None, [self._z(b, b.corrupted) for b in self.batches]
        else:
            self.kind = get_kind(ablation)
            self.values = self._values(ablation)
        # each batch's gradient pass in bytes (attribution.memory), what holding its graph takes
        from interp_heads.attribution.memory import row_bytes

        self._need = [row_bytes(cfg, b.clean.shape[1]) * len(b) for b in self.batches]
        # every head's rewrite: what a kept head's estimated cost is measured against
        self.every = self._plan(torch.ones(self.shape, dtype=torch.bool))

    def _z(self, b: Batch, tokens) -> list[torch.Tensor]:
        """Each layer's ``z`` on ``tokens`` (the batch's mask), unablated."""
        return z_forward(self.model, tokens, lambda lg, b=b: answer_logprob(lg, b),
                         attention_mask=b.mask, graph=False).z  # fmt: skip

    def _values(self, ablation: str):
        """The kind's values over all non-pad positions of the searched prompts (no ablation):
        ``{layer: [head, d_head]}``, per position ``{layer: [from_end, head, d_head]}``, or for
        ``resample`` one such dict per prompt."""
        sums, counts, rows = None, None, []
        for b in self.batches:
            zs = self._z(b, b.clean)
            w = b.mask.flip(1).to(zs[0].dtype)  # column j: j tokens before the last
            if b.weight is not None:  # a row counted c times counts c times in the means
                w = w * b.weight.to(w.dtype)[:, None]
            flipped = [z.flip(1) * w[:, :, None, None] for z in zs]
            n = w.sum(1).clamp(min=1)
            each = [{layer: (f[i].sum(0) / n[i]).cpu() for layer, f in enumerate(flipped)}
                    for i in range(len(b))]  # fmt: skip
            rows += [row for row, c in zip(each, b.counts, strict=True) for _ in range(c)]
            part = [_padded(f.sum(0), self.longest) for f in flipped]  # [from_end, head, d]
            count = _padded(w.sum(0), self.longest)
            sums = part if sums is None else [s + p for s, p in zip(sums, part, strict=True)]
            counts = count if counts is None else counts + count
        if ablation == "resample":
            return rows
        if ablation == "position_mean":
            return {layer: (s / counts.clamp(min=1)[:, None, None]).cpu()
                    for layer, s in enumerate(sums)}  # fmt: skip
        return {layer: (s.sum(0) / counts.sum()).cpu() for layer, s in enumerate(sums)}

    @property
    def longest(self) -> int:
        return max(b.clean.shape[1] for b in self.batches)

    def _plan(self, ablated: torch.Tensor) -> dict:
        """``{layer: (heads, Rewrite)}`` of the kind for the heads of ``ablated`` (Rewrite None:
        the counterfactual ``z``)."""
        from interp_heads.interventions.masks import rewrites

        heads = [divmod(int(i), self.shape[1]) for i in ablated.flatten().nonzero()[:, 0]]
        if self.kind is None:
            return {layer: (hs, None) for layer, hs in heads_by_layer(heads).items()}
        return rewrites(heads, self.kind, self.values, self.seed)

    def _rewritten(self, z: torch.Tensor, step, batch: int, layer: int) -> torch.Tensor:
        """``z`` of batch ``batch`` with the heads of one layer's ``(heads, Rewrite)`` rewritten
        (a new tensor)."""
        heads, rewrite = step
        out = z.clone()
        if rewrite is None:
            out[:, :, heads] = self.values[batch][layer][:, :, heads].to(z.dtype)
        else:
            out[:, :, heads] = rewrite.apply(z[:, :, heads])
        return out

    def forward(self, ablated: torch.Tensor) -> Trial:
        """The passes with the heads of ``ablated`` (``[layer, head]`` bool) ablated: m and m
        per example now, each kept head's estimated cost only if asked (:meth:`Trial.cost`, the
        backward passes), so a trial the search rejects costs forward passes only.

        A batch's graph is kept for the backward pass while half the free memory holds it and
        the next batch's gradient pass (:meth:`_holds`; the last batch's always: the batches
        were cut so that one pass fits); a batch run without its graph is run again with it when
        its cost is asked for. Either way the values are those of the same forward pass."""
        plan, passes, each, total = self._plan(ablated), [], [], 0.0
        for i in range(len(self.batches)):
            keep = i == len(self.batches) - 1 or self._holds(i)
            run = self._pass(i, plan, graph=keep)
            passes.append(run if keep else None)
            values = run.values.detach().float()
            b = self.batches[i]
            if b.weight is None:
                total += float(values.sum())  # m: one float per batch, summed in batch order
            else:
                total += float((values.double() * b.weight.double()).sum())
            each.append(np.repeat(values.cpu().numpy(), b.counts))
        each = np.concatenate(each)
        return Trial(self, ablated, plan, passes, total / len(each), each)

    def _pass(self, i: int, plan: dict, graph: bool = True) -> ZPass:
        """Batch ``i``'s forward pass with the heads of ``plan`` rewritten (``graph``: kept for
        the backward pass)."""
        b = self.batches[i]

        def ablate(z, layer):
            return self._rewritten(z, plan[layer], i, layer) if layer in plan else z

        return z_forward(self.model, b.clean, lambda lg: answer_logprob(lg, b),
                         attention_mask=b.mask, transform=ablate, graph=graph)  # fmt: skip

    def _holds(self, i: int) -> bool:
        """Whether batch ``i``'s graph may be kept: half the free memory now holds it and the
        largest gradient pass of the batches after it (:data:`HOLD_SHARE`)."""
        from interp_heads.attribution import memory

        free = memory.free_bytes(self.model.cfg.device)
        if free is None:
            return False
        return self._need[i] + max(self._need[i + 1 :]) <= HOLD_SHARE * free

    def run(self, ablated: torch.Tensor) -> tuple[float, torch.Tensor, np.ndarray]:
        """m with the heads of ``ablated`` (``[layer, head]`` bool) ablated, per head the
        estimated drop of m if it were ablated too (``[layer, head]``; 0 for ablated heads), and
        m per example."""
        trial = self.forward(ablated)
        return trial.m, trial.cost(), trial.each

    def _cost(self, ablated: torch.Tensor, plan: dict, passes: list) -> torch.Tensor:
        """Each kept head's estimated drop of m (``sum_pos grad . (z - z ablated)``, averaged over
        the examples) from the passes' backward (a pass held as None is run again); 0 for the
        heads of ``ablated``."""
        cost, n = torch.zeros(self.shape), 0
        for i, b in enumerate(self.batches):
            run, passes[i] = passes[i] or self._pass(i, plan), None  # each graph freed once used
            zs, grads = run.z, run.gradients()
            del run
            w = b.mask.to(zs[0].dtype)
            if b.weight is not None:  # a row's gradient is its own value's: counted c times
                w = w * b.weight.to(w.dtype)[:, None]
            w = w[:, :, None, None]
            for layer, (z, g) in enumerate(zip(zs, grads, strict=True)):
                gone = self._rewritten(z, self.every[layer], i, layer)
                term = (g * (z - gone) * w).sum(dim=(0, 1, 3))
                cost[layer] += term.float().cpu()
            n += sum(b.counts)
        return torch.where(ablated, 0.0, cost / n)


@dataclass
class Trial:
    """One kept set's passes (:meth:`KeptModel.forward`): ``m``, ``each`` (m per example) and,
    on demand, the kept heads' estimated costs (taken once, then the graphs are dropped)."""

    kept_model: KeptModel
    ablated: torch.Tensor
    plan: dict
    passes: list[ZPass | None] | None  # per batch its pass with the graph, None: run again
    m: float
    each: np.ndarray
    _cost: torch.Tensor | None = None

    def cost(self) -> torch.Tensor:
        if self._cost is None:
            self._cost = self.kept_model._cost(self.ablated, self.plan, self.passes)
            self.passes = None
        return self._cost


def _padded(t: torch.Tensor, n: int) -> torch.Tensor:
    """``t`` with zero rows appended up to ``n`` rows."""
    return torch.cat([t, t.new_zeros((n - len(t), *t.shape[1:]))])
