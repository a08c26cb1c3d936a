"""The built-in executors: each registered class imports its executor when it builds one, so the
names are known (and a config checked) without importing torch. ``local`` and ``ray`` also run a
study's whole runs (``run_runs``: ``execution.whole_runs``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from annotated_types import Gt

from interp_heads.execution.registry import EXECUTORS, ExecutorContext


@EXECUTORS.register
class Local:
    """This process; packed batches on CUDA, one condition at a time elsewhere."""

    name = "local"

    @classmethod
    def build(cls, options, ctx: ExecutorContext):
        from interp_heads.execution.local import LocalExecutor

        return LocalExecutor(ctx.model)

    @staticmethod
    def run_runs(runs, run_one) -> None:
        """A study's whole runs: one after another, in this process."""
        from interp_heads.execution.whole_runs import run_in_process

        run_in_process(runs, run_one)


@EXECUTORS.register
class Plain:
    """This process, one condition at a time."""

    name = "plain"

    @classmethod
    def build(cls, options, ctx: ExecutorContext):
        from interp_heads.execution.local import PlainExecutor

        return PlainExecutor(ctx.model)


@EXECUTORS.register
class Packed:
    """This process, rows of many conditions in each batch (``execution.packed``)."""

    name = "packed"

    @classmethod
    def build(cls, options, ctx: ExecutorContext):
        from interp_heads.execution.packed import PackedExecutor

        return PackedExecutor(ctx.model)


@EXECUTORS.register
class Ray:
    """Ray actors that load ``settings.model`` and must match ``model``'s fingerprint."""

    name = "ray"

    @dataclass(frozen=True)
    class Options:
        ray_address: str | None = field(
            default=None,
            metadata={
                "help": "Ray cluster to join (None: $RAY_ADDRESS, else a local Ray instance)"
            },
        )
        n_workers: Annotated[int, Gt(0)] | None = field(default=None, metadata={
            "help": "Ray actors (None: one per GPU, else CPU)"})  # fmt: skip

    @classmethod
    def build(cls, options, ctx: ExecutorContext):
        from interp_heads.execution.ray import RayExecutor
        from interp_heads.store.resume import model_fingerprint

        settings = ctx.settings
        return RayExecutor(
            settings.model,
            device=settings.device,
            n_workers=options.n_workers,
            address=options.ray_address,
            n_devices=settings.n_devices,
            backend=settings.backend,
            fingerprint=model_fingerprint(ctx.model),
        )

    @staticmethod
    def run_runs(runs, run_one) -> None:
        """A study's whole runs: one Ray task a run, wave after wave."""
        from interp_heads.execution.whole_runs import run_on_ray

        run_on_ray(runs, run_one)
