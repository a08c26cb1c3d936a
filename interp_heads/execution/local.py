"""The in-process executors: ``plain`` (one condition at a time) and ``local`` (packed on CUDA)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from interp_heads.execution.base import Finished, SweepUnit, generate_masked
from interp_heads.execution.packed import PackedExecutor, PackRows, packing_enabled


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

    ``pack_rows`` None (the default): packed and sized from free memory on CUDA, plain elsewhere
    (packing measured no faster on CPU); ``0``: plain; ``"auto"`` or an int: packed.
    """

    def __init__(self, model, pack_rows: PackRows = None):
        packed = packing_enabled(pack_rows, model)
        self.inner = PackedExecutor(model, pack_rows) if packed else PlainExecutor(model)

    def run(self, units: Sequence[SweepUnit]) -> Iterator[list[Finished]]:
        return self.inner.run(units)

    def close(self) -> None:
        self.inner.close()
