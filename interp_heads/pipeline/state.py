"""A run's inputs: ``Experiment`` (config, model, tasks, run folder) and ``Invocation`` (how this
command runs them). Both are frozen; what the run records as it goes (manifest, timings, the
artefacts the steps hand each other) is the run's :class:`~interp_heads.pipeline.record.RunRecord`,
owned by ``pipeline.steps.run_steps``."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from interp_heads.config.run_config import RunConfig
from interp_heads.pipeline.config_view import StepConfig
from interp_heads.store.folder import RunFolder
from interp_heads.tasks.schema import Task


@dataclass(frozen=True)
class Invocation:
    """How this command runs: no progress bars (``quiet``) but those of the steps in ``bars``;
    notes on stderr (``notes``: what was chosen and left out, as ``attribute`` and ``ablate``
    say); ``force``; where the sweep's conditions run (``executor``: None is this process) and
    the generations shared with other runs (``shared``). None of it changes a result."""

    quiet: bool = False
    notes: bool = False
    force: bool = False
    executor: Any = None
    shared: Any = None  # config.shared_store (a folder), when set
    bars: tuple[str, ...] = ()  # steps whose own progress bar shows although ``quiet``

    def for_step(self, name: str) -> Invocation:
        """This invocation as step ``name`` sees it (its own bar shown when in ``bars``)."""
        return replace(self, quiet=self.quiet and name not in self.bars)

    def sweep_options(self) -> dict:
        """``run_sweep``'s keywords for where it runs (the shared store only when set)."""
        return {"executor": self.executor} | (
            {} if self.shared is None else {"shared": self.shared}
        )


@dataclass(frozen=True)
class Experiment:
    """A run's inputs: its config, model, tasks and run folder, and how this command runs them
    (``invocation``). A step reads these and its declared artefacts; it records into the run's
    ``RunRecord``, never here."""

    config: RunConfig | StepConfig  # a step's: the view of its declared sections
    folder: RunFolder
    model: Any  # the backend's model class (HookedTransformer, TransformerBridge)
    tasks: Mapping[str, Task] = field(default_factory=dict)
    invocation: Invocation = field(default_factory=Invocation)

    def say(self, line: str) -> None:
        """A note for the user on stderr (what was chosen, what was left out), when asked for."""
        if self.invocation.notes:
            print(line, file=sys.stderr)


def progress_bar(total: int, desc: str, quiet: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, disable=quiet, leave=False)
