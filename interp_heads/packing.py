"""Packed sweeps: rows of many conditions (tasks, selections, k, seeds) share one generation batch.

The plain sweep runs each condition alone, ``batch_size`` rows at a time; on a GPU a small model at
batch 32 is bound by kernel launches, and every condition ends with a part-filled batch. Here each
pending ``(condition, example)`` pair is one row; rows are grouped into *waves* of whole conditions
(``16 x pack_rows`` rows), sorted by prompt length inside a wave (rows of one prompt sit together,
so padding stays small) and generated ``pack_rows`` at a time under
:func:`interp_heads.batched_mask.mask_rows`, which masks each row with its own condition's heads.
At the end of a wave its conditions are scored (each distinct answer once, through
:class:`interp_heads.metrics.MetricCache`) and written to the resume store, exactly as the plain
sweep writes them, so the two paths resume each other and give the same tokens row for row.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import torch

from interp_heads.ablation import SCALE_FACTOR, AblationKind, HeadValues
from interp_heads.batched_mask import RowMasks, mask_rows
from interp_heads.generation import generate
from interp_heads.heads import Head

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
    method: AblationKind | str,
    max_new_tokens: int,
    *,
    pack_rows: int,
    positions: str = "all",
    factor: float = SCALE_FACTOR,
    **kwargs,
) -> list[list[str]]:
    """Each job's generations, as ``generate`` under ``mask_heads(job.heads, ...)`` alone gives them.

    Keyword arguments go to :func:`interp_heads.generation.generate` (``stop_at_newline``,
    ``use_cache`` ...); ``pack_rows`` is its batch size; ``positions`` and ``factor`` are those of
    ``mask_heads``.
    """
    masks = RowMasks.build(
        model,
        [(j.heads, method, j.values, j.seed) for j in jobs],
        positions=positions,
        factor=factor,
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


def run_packed(
    model, tasks, plans, config, store, metrics, cache, prepare, *, batch_size, pack_rows, progress
):
    """Run every pending condition of a sweep packed; the plain loop then only collects.

    ``prepare(name, task)`` gives a task's ``(prompts, ids, values, unit)`` as ``run_sweep``
    computes them (``unit``: the inputs of its conditions' resume keys).

    Returns:
        ``({condition key: payload}, {task: seconds})`` for the conditions run here. Payloads are
        those of ``sweep._run_condition`` plus their resume key (a wave's time is shared by rows).
    """
    from interp_heads.conditions import condition_payload as _condition_payload
    from interp_heads.conditions import metric_items as _metric_items
    from interp_heads.conditions import pending_conditions

    if not packing_enabled(pack_rows, model):
        return {}, {}
    pending = [
        PackedJob(
            c.prompts, c.heads, c.values, 0, {**c.meta, "key": c.key, "resume_key": c.resume_key}
        )
        for c in pending_conditions(
            model, tasks, plans, config.ablation, store, prepare, config.mask_options()
        )
    ]
    if not pending:
        return {}, {}
    all_prompts = [
        p
        for name in dict.fromkeys(j.meta["task"] for j in pending)
        for p in prepare(name, tasks[name])[0]
    ]
    rows = resolve_pack_rows(pack_rows, model, batch_size, all_prompts, config.max_new_tokens)
    finished: dict[str, dict] = {}
    seconds: dict[str, float] = {}
    bar = _progress(len(pending), progress)
    for wave in _waves(pending, rows * WAVE_BATCHES):
        t0 = time.perf_counter()
        outs = generate_packed(
            model,
            wave,
            config.ablation,
            config.max_new_tokens,
            pack_rows=rows,
            stop_at_newline=not config.free_form,
            **config.mask_options(),
        )
        t_gen = time.perf_counter() - t0
        n_rows = sum(len(j.prompts) for j in wave)
        items = [
            it
            for job, gen in zip(wave, outs, strict=True)
            for it in _metric_items(tasks[job.meta["task"]], gen, config.free_form)
        ]
        for metric in metrics:  # one metric call per wave for all its distinct new answers
            cache.prime(metric, items)
        for job, gen in zip(wave, outs, strict=True):
            m, share = job.meta, t_gen * len(job.prompts) / n_rows
            done = _condition_payload(
                tasks[m["task"]],
                job.heads,
                gen,
                metrics,
                cache,
                share,
                time.perf_counter() - share,
                config.free_form,
            )
            done.update(
                {key: m[key] for key in ("task", "selection", "k", "seed", "ids", "resume_key")}
            )
            store.put(m["key"], done)
            finished[m["key"]] = done
            seconds[m["task"]] = seconds.get(m["task"], 0.0) + done["seconds"]["total"]
            bar.update(1)
    bar.close()
    return finished, seconds


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


def _progress(total: int, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="sweep conditions (packed)", disable=not enabled, leave=False)
