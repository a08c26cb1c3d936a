"""The in-process executors: ``plain`` (one condition at a time) and ``local`` (packed on CUDA;
elsewhere the conditions over a shared prompt prefix packed, the others one at a time)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import groupby

import torch

from interp_heads.execution.base import Finished, SweepUnit, generate_masked
from interp_heads.execution.packed import (
    PackedExecutor,
    PackRows,
    packing_enabled,
    run_over_prefix,
)

# Conditions a batch over one prompt prefix where ``local`` packs nothing else (device types),
# when every attention layer can read the prefix in place (``generation.fast_attention``):
# measured on 2 CPU cores, 48 study prompts (bench/speed/bench_shared_prefix.py).
PREFIX_COPIES = {"cpu": 8}


class PlainExecutor:
    """Generates each unit alone on ``model``, ``batch_size`` rows at a time, in order."""

    def __init__(self, model):
        self.model = model

    def run(self, units: Sequence[SweepUnit]) -> Iterator[list[Finished]]:
        for unit in units:
            outs, seconds = generate_masked(self.model, unit, unit.context)
            yield [(unit, outs, seconds)]

    def close(self) -> None:
        pass


class LocalExecutor:
    """This process: packed batches when ``pack_rows`` asks for them on this device, else plain.

    ``pack_rows`` None (the default): packed and sized from free memory on CUDA; elsewhere the
    conditions over a prompt prefix :data:`PREFIX_COPIES` a batch (each prefix key is then read
    once per step for all of them) where the model can read the prefix in place, and the others
    one at a time (packing whole prompts measured 7-8x slower on CPU); ``0``: plain; ``"auto"``
    or an int: packed.
    """

    def __init__(self, model, pack_rows: PackRows = None):
        from interp_heads.generation.fast_attention import can_fuse

        packed = packing_enabled(pack_rows, model)
        self.model = model
        self.inner = PackedExecutor(model, pack_rows) if packed else PlainExecutor(model)
        device = torch.device(model.cfg.device).type
        self.copies = 1
        if pack_rows is None and not packed and can_fuse(model):
            self.copies = PREFIX_COPIES.get(device, 1)

    def run(self, units: Sequence[SweepUnit]) -> Iterator[list[Finished]]:
        if self.copies == 1:
            yield from self.inner.run(units)
            return
        for over_prefix, run in groupby(units, key=lambda u: u.from_prefix):  # order kept
            run = list(run)
            if over_prefix:
                yield from run_over_prefix(self.model, run, self.copies)
            else:
                yield from self.inner.run(run)

    def close(self) -> None:
        self.inner.close()
