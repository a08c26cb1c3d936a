"""Executors: where a sweep's masked generations run (this process, packed batches, Ray workers).

The sweep (``sweep.loop``) plans the grid, computes each task's replacement values, looks up the
finished conditions in the resume store and hands the *pending* ones to an executor as
:class:`SweepUnit` objects: plain, picklable descriptions of one condition (its task's
:class:`TaskContext`, heads, ablation kind, generation settings). An executor generates each
unit's answers wherever its model lives and yields *groups* of finished units, in any order; the
sweep scores each group (one metric call per metric for the group's new answers) and stores each
condition once, so run folders, resume keys and tables do not depend on the executor.

The executors are registered by name (``execution.registry.EXECUTORS``): ``local`` (this process;
packed batches on CUDA), ``plain`` (one condition at a time), ``packed`` and ``ray``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from interp_heads.generation.decode import generate
from interp_heads.heads import Head
from interp_heads.interventions.kinds import Ablation
from interp_heads.interventions.masks import mask_heads
from interp_heads.interventions.means import HeadValues


@dataclass(frozen=True)
class Generation:
    """How a sweep generates: greedy, ``max_new_tokens``, the first-line stop, ``batch_size``;
    ``stop_after``: a vocabulary token that ends an answer and is kept (``"]"`` in the
    ``cognitive_mirrors`` prompt format), None for none; ``batch_padding``: the most padding
    positions a batch holds (``generation.decode.batches``), None for no such limit."""

    max_new_tokens: int
    batch_size: int = 32
    stop_at_newline: bool = True
    stop_after: str | None = None
    batch_padding: int | None = None

    def key(self) -> dict:
        """These settings as resume keys hold them (``stop_after`` only when set)."""
        key = {
            "max_new_tokens": self.max_new_tokens,
            "decoding": "greedy",
            "stop_at_newline": self.stop_at_newline,
            "batch_size": self.batch_size,
        }
        if self.stop_after is not None:
            key["stop_after"] = self.stop_after
        if self.batch_padding is not None:
            key["batch_padding"] = self.batch_padding
        return key

    def run(self, model, prompts: Sequence[str], prefixes=None) -> list[str]:
        return generate(
            model,
            list(prompts),
            self.max_new_tokens,
            batch_size=self.batch_size,
            stop_at_newline=self.stop_at_newline,
            stop_after=self.stop_after,
            prefixes=prefixes,
            batch_padding=self.batch_padding,
        )


@dataclass
class TaskContext:
    """What every condition of one task shares: its rendered prompts and replacement values;
    ``prefixes``: the prompts' unmasked prefix passes, made on first use by a last-position or
    generated-positions mask (``generation.prefix``; never pickled: a worker makes its own)."""

    name: str
    prompts: list[str]
    values: HeadValues | list[HeadValues] | None = None
    prefixes: dict = field(default_factory=dict, repr=False, compare=False)

    def __getstate__(self):
        return {**self.__dict__, "prefixes": {}}

    def prefixes_for(self, model, generation: Generation, whole: bool = False):
        """The :class:`~interp_heads.generation.prefix.PromptPrefixes` of these prompts in
        ``generation``'s batches (``whole``: of the whole prompts), made once (call it with no
        mask active)."""
        from interp_heads.generation.prefix import shared_prefixes

        key = (generation.batch_size, generation.batch_padding, whole)
        if key not in self.prefixes:  # the unmasked answers or the probe may have made it
            self.prefixes[key] = shared_prefixes(
                model, self.prompts, batch_size=generation.batch_size, whole=whole,
                batch_padding=generation.batch_padding,
            )  # fmt: skip
        return self.prefixes[key]


@dataclass
class SweepUnit:
    """One pending condition of a sweep: everything a worker needs to generate its answers.

    ``context`` is the task's :class:`TaskContext` (or, inside the Ray executor, a reference to
    it in the object store, so prompts and values travel once per task, not once per unit).
    """

    key: str  # the condition's file name in ``conditions/`` (``task__selection__k__seed``)
    resume_key: str
    context: TaskContext | object
    heads: list[Head]
    ablation: Ablation  # the kind object, with its options (``interventions.kinds``)
    generation: Generation
    meta: dict = field(default_factory=dict)  # task, selection, k, seed, ids (for the sweep)
    positions: str = "all"  # the mask's scope (``mask_heads``)

    @property
    def from_prefix(self) -> bool:
        """Whether its answers start from the prompts' unmasked prefix: a mask at the last
        positions, or any condition at the generated positions. The unmasked condition reads
        what the unmasked reference answers read (``sweep.unmasked``): at the generated
        positions the whole prompts' pass, else the whole prompts; so the two are the same
        computation and agree exactly."""
        return self.positions == "generated" or (self.positions == "last" and len(self.heads) > 0)

    def prefixes(self, model, context: TaskContext):
        """Its prompts' prefix passes (all but the last token; the whole prompt for a mask at
        the generated positions), made once per task (call it with no mask active), or None."""
        if not self.from_prefix:
            return None
        return context.prefixes_for(model, self.generation, self.positions == "generated")


Finished = tuple[SweepUnit, list[str], float]  # a unit, its generations, seconds generating


@runtime_checkable
class Executor(Protocol):
    """Runs units somewhere and yields groups of finished units as they finish."""

    def run(self, units: Sequence[SweepUnit]) -> Iterator[list[Finished]]: ...

    def close(self) -> None: ...


class ExecutorError(ValueError):
    """A bad executor setting (unknown name, ray not installed...): one line."""


def values_to_cpu(values):
    """Replacement values (a dict of tensors, a list of them, or None) moved to the CPU."""
    if values is None:
        return None
    if isinstance(values, list):
        return [values_to_cpu(v) for v in values]
    return {layer: t.detach().to("cpu") for layer, t in values.items()}


def generate_masked(model, unit: SweepUnit, context: TaskContext) -> tuple[list[str], float]:
    """A unit's answers: its heads masked on ``hook_z`` while ``model`` generates; ``(outs, s)``.
    A mask at the last position only starts every batch from its unmasked prompt prefix (all
    prompt tokens but the last), a mask at the generated positions from its unmasked prompt
    pass (the whole prompt and the first token's logits): :meth:`SweepUnit.prefixes`."""
    t0 = time.perf_counter()
    prefixes = unit.prefixes(model, context)
    with mask_heads(
        model,
        unit.heads,
        unit.ablation,
        values=context.values,
        positions=unit.positions,
    ):
        outs = unit.generation.run(model, context.prompts, prefixes)
    return outs, time.perf_counter() - t0
