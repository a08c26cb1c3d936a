"""Packed sweeps: rows of many conditions (tasks, selections, k, seeds) share one generation batch.

The plain sweep runs each condition alone, ``batch_size`` rows at a time; on a GPU a small model at
batch 32 is bound by kernel launches, and every condition ends with a part-filled batch. Here each
pending ``(condition, example)`` pair is one row; rows are grouped into *waves* of whole conditions
(``16 x pack_rows`` rows), sorted by prompt length inside a wave (rows of one prompt sit together,
so padding stays small) and generated ``pack_rows`` at a time under
:func:`interp_heads.interventions.row_masks.mask_rows`, which masks each row with its own condition's heads.
At the end of a wave its conditions are scored (each distinct answer once, through
:class:`interp_heads.metrics.MetricCache`) and written to the resume store, exactly as the plain
sweep writes them, so the two paths resume each other and give the same tokens row for row.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import groupby
from typing import Literal

import torch

from interp_heads.execution.base import Finished, SweepUnit
from interp_heads.generation.decode import generate
from interp_heads.heads import Head
from interp_heads.interventions.kinds import Ablation
from interp_heads.interventions.means import HeadValues
from interp_heads.interventions.row_masks import RowMasks, mask_rows

PackRows = int | Literal["auto"] | None
WAVE_BATCHES = 16


@dataclass
class PackedJob:
    """One condition's rows: its prompts, its heads and the values ``mask_heads`` would get."""

    prompts: list[str]
    heads: list[Head]
    values: HeadValues | list[HeadValues] | None = None
    seed: int = 0
    meta: dict = field(default_factory=dict)


def auto_pack_rows(
    model, prompt_tokens: int, max_new_tokens: int, *, fraction: float = 0.5, cap: int = 4096
) -> int:
    """Rows per batch that fit in ``fraction`` of the free CUDA memory (a multiple of 8, 1..cap).

    The estimate per row is the KV cache at full length plus the prompt pass's largest activations
    (attention scores and pattern in fp32, MLP hidden, a few residual copies, last-position logits).
    """
    cfg = model.cfg
    free, _ = torch.cuda.mem_get_info(torch.device(cfg.device))
    size = torch.finfo(cfg.dtype).bits // 8
    ctx = prompt_tokens + max_new_tokens
    n_kv = cfg.n_key_value_heads or cfg.n_heads
    d_mlp = cfg.d_mlp or 4 * cfg.d_model
    kv = 2 * cfg.n_layers * n_kv * cfg.d_head * ctx * size
    act = (
        3 * cfg.n_heads * ctx * ctx * 4
        + 3 * ctx * d_mlp * size
        + 8 * ctx * cfg.d_model * size
        + 2 * cfg.d_vocab * 4
    )
    rows = int(free * fraction) // (kv + act)
    rows = min(cap, rows)
    return max(1, rows - rows % 8 if rows >= 8 else rows)


def packing_enabled(pack_rows: PackRows, model) -> bool:
    """Whether ``pack_rows`` asks for packing on this model's device (see :func:`resolve_pack_rows`)."""
    if pack_rows is None:
        return torch.device(model.cfg.device).type == "cuda"
    return pack_rows != 0


def resolve_pack_rows(
    pack_rows: PackRows, model, batch_size: int, prompts: Sequence[str], max_new_tokens: int
):
    """Rows per packed batch, or None for the plain one-condition-at-a-time path.

    ``None``: packed, auto-sized, on CUDA; plain on other devices (packing measured no faster there).
    ``"auto"``: auto-sized on CUDA, ``batch_size`` rows elsewhere. ``0``: plain everywhere.
    An int: that many rows.
    """
    if not packing_enabled(pack_rows, model):
        return None
    if pack_rows is None or pack_rows == "auto":
        if torch.device(model.cfg.device).type != "cuda":
            return batch_size
        longest = max(
            (len(model.to_tokens(p, move_to_device=False)[0]) for p in prompts), default=1
        )
        return auto_pack_rows(model, longest, max_new_tokens)
    if int(pack_rows) < 1:
        raise ValueError(f"pack_rows must be at least 1, got {pack_rows}")
    return int(pack_rows)


def generate_packed(
    model,
    jobs: Sequence[PackedJob],
    ablation: str | Ablation,
    max_new_tokens: int,
    *,
    pack_rows: int,
    positions: str = "all",
    **kwargs,
) -> list[list[str]]:
    """Each job's generations, as ``generate`` under ``mask_heads(job.heads, ...)`` alone gives them.

    Keyword arguments go to :func:`interp_heads.generation.decode.generate` (``stop_at_newline``,
    ``use_cache`` ...); ``pack_rows`` is its batch size; ``ablation`` and ``positions`` are those
    of ``mask_heads`` (a kind with options: an ``Ablation`` object, ``get_kind(name, **options)``).
    """
    masks = RowMasks.build(
        model,
        [(j.heads, ablation, j.values, j.seed) for j in jobs],
        positions=positions,
    )
    prompts: list[str] = []
    condition: list[int] = []
    for c, job in enumerate(jobs):
        prompts += job.prompts
        condition += [c] * len(job.prompts)
    with mask_rows(model, masks, warn_if_idle=False) as handle:

        def on_batch(idx: list[int]) -> None:
            handle.rows = [condition[i] for i in idx]

        outs = generate(
            model, prompts, max_new_tokens, batch_size=pack_rows, on_batch=on_batch, **kwargs
        )
    split, start = [], 0
    for job in jobs:
        split.append(outs[start : start + len(job.prompts)])
        start += len(job.prompts)
    return split


class PackedExecutor:
    """Generates pending units packed: rows of many conditions share each batch (this process).

    ``pack_rows``: rows per batch (an int), or ``"auto"``/None (sized from free CUDA memory on
    CUDA, ``batch_size`` rows elsewhere). Each wave of whole conditions is one group of results.
    """

    def __init__(self, model, pack_rows: PackRows = "auto"):
        self.model = model
        self.pack_rows = "auto" if pack_rows is None else pack_rows

    def run(self, units: Sequence[SweepUnit]) -> Iterator[list[Finished]]:
        if not units:
            return
        first = units[0]
        contexts = {u.context.name: u.context for u in units}
        prompts = [p for c in contexts.values() for p in c.prompts]
        rows = resolve_pack_rows(
            self.pack_rows,
            self.model,
            first.generation.batch_size,
            prompts,
            first.generation.max_new_tokens,
        )
        per = max(1, rows // first.generation.batch_size)
        yield from run_over_prefix(self.model, [u for u in units if u.from_prefix], per)
        jobs = [
            PackedJob(u.context.prompts, u.heads, u.context.values, 0, {"unit": u})
            for u in units
            if not u.from_prefix
        ]
        for wave in _waves(jobs, rows * WAVE_BATCHES):
            t0 = time.perf_counter()
            outs = generate_packed(
                self.model,
                wave,
                first.ablation,
                first.generation.max_new_tokens,
                pack_rows=rows,
                stop_at_newline=first.generation.stop_at_newline,
                stop_after=first.generation.stop_after,
                positions=first.positions,
            )
            t_gen = time.perf_counter() - t0
            n_rows = sum(len(j.prompts) for j in wave)
            yield [
                (job.meta["unit"], gen, t_gen * len(job.prompts) / n_rows)
                for job, gen in zip(wave, outs, strict=True)
            ]

    def close(self) -> None:
        pass


def run_over_prefix(model, units: list[SweepUnit], per: int) -> Iterator[list[Finished]]:
    """Masked conditions that leave the prompt prefix alone (``last``, ``generated``), packed
    as copies of each batch of their task's prompts over its one unmasked prefix: the plain
    path's batches and prefixes (``execution.base.generate_masked``), up to ``per`` consecutive
    conditions of one task a batch. Each condition is yielded as its own group, in the order
    given, so the sweep scores them in the groups and order of the plain path (metrics that
    embed answers in batches then give bitwise the same scores)."""
    for _, same_task in groupby(units, key=lambda u: u.context.name):
        group = list(same_task)
        prefixes = group[0].prefixes(model, group[0].context)  # no mask active yet
        for start in range(0, len(group), per):
            chunk = group[start : start + per]
            t0 = time.perf_counter()
            outs = generate_copies(model, chunk, prefixes)
            seconds = (time.perf_counter() - t0) / len(chunk)
            for u, gen in zip(chunk, outs, strict=True):
                yield [(u, gen, seconds)]


def generate_copies(model, units: Sequence[SweepUnit], prefixes) -> list[list[str]]:
    """The answers of ``units`` (one task, one scope) in shared batches: each batch of the task's
    prompts once per unit, from the batch's prefix, each copy masked by its unit's heads."""
    first, prompts = units[0], units[0].context.prompts
    masks = RowMasks.build(
        model,
        [(u.heads, first.ablation, u.context.values, 0) for u in units],
        positions=first.positions,
    )
    n, g = len(prompts), first.generation
    with mask_rows(model, masks, warn_if_idle=False) as handle:

        def on_batch(idx: list[int]) -> None:
            handle.rows = [i // n for i in idx]

        outs = generate(
            model, prompts, g.max_new_tokens, batch_size=g.batch_size, on_batch=on_batch,
            stop_at_newline=g.stop_at_newline, stop_after=g.stop_after, prefixes=prefixes,
            batch_padding=g.batch_padding, copies=len(units),
        )  # fmt: skip
    return [outs[c * n : (c + 1) * n] for c in range(len(units))]


def _waves(jobs: list[PackedJob], wave_rows: int):
    wave: list[PackedJob] = []
    n = 0
    for job in jobs:
        if wave and n + len(job.prompts) > wave_rows:
            yield wave
            wave, n = [], 0
        wave.append(job)
        n += len(job.prompts)
    if wave:
        yield wave
