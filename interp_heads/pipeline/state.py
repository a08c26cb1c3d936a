"""``Experiment``: the state a run's steps share (config, model, tasks, rankings, run folder)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from interp_heads.config.run_config import RunConfig
from interp_heads.model_info import source_of
from interp_heads.run import RunWriter
from interp_heads.store.folder import RunFolder
from interp_heads.store.provenance import git_hash, versions
from interp_heads.tasks.schema import Task

if TYPE_CHECKING:
    from interp_heads.pipeline.given_ranking import GivenRanking
    from interp_heads.sweep.config import SweepConfig
    from interp_heads.sweep.result import SweepResult


@dataclass
class Experiment:
    """What the steps share: inputs (config, model, tasks, formats, metrics) and what steps made."""

    config: RunConfig
    folder: RunFolder
    model: Any  # the backend's model class (HookedTransformer, TransformerBridge)
    tasks: dict[str, Task] = field(default_factory=dict)
    fmts: dict[str, str] = field(default_factory=dict)
    fmt_infos: dict[str, dict] = field(default_factory=dict)
    metrics: list = field(default_factory=list)
    ks: list[int] = field(default_factory=list)
    quiet: bool = False  # no progress bars
    notes: bool = False  # say what was chosen and left out on stderr (attribute, ablate)
    force: bool = False
    digest: str = ""
    batch_size: int = 16
    sweep_config: SweepConfig | None = None
    sweep_options: dict = field(default_factory=dict)  # extra run_sweep arguments (executor...)
    provenance: dict = field(default_factory=dict)  # added to every new HeadScores' provenance
    given: dict[str, GivenRanking] = field(default_factory=dict)  # by task
    plan: list[str] = field(default_factory=list)  # the steps this run takes
    # made by the steps
    base_rows: list[dict] = field(default_factory=list)
    splits: dict[str, tuple[Task, Task]] = field(default_factory=dict)  # task: (rank, eval)
    baseline_entries: dict | None = None  # split before the claim, stored by the baseline step
    rankings: dict = field(default_factory=dict)  # task: HeadScores or ordered head list
    result: SweepResult | None = None
    timings: dict[str, float] = field(default_factory=dict)
    manifest: dict = field(default_factory=dict)

    def say(self, line: str) -> None:
        """A note for the user on stderr (what was chosen, what was left out), when asked for."""
        if self.notes:
            print(line, file=sys.stderr)

    @property
    def eval_tasks(self) -> dict[str, Task]:
        return {name: ev for name, (_, ev) in self.splits.items()}

    def write_manifest(self, status: str, **extra) -> None:
        """The one manifest writer: inputs, provenance, splits, timings, and ``status``."""
        model = self.model
        if "git" not in self.manifest:  # once per process (a git subprocess, package metadata)
            self.manifest.update(versions=versions(), git=git_hash())
        if "files" not in self.manifest:  # the tool's files listed by an earlier invocation
            files = self.folder.read_manifest().get("files")
            self.manifest["files"] = files if isinstance(files, dict) else {}
        self.manifest.update(
            config=self.config.to_dict(),
            config_digest=self.digest,
            status=status,
            ks=self.ks or None,
            model={
                **source_of(model),
                "n_layers": model.cfg.n_layers,
                "n_heads": model.cfg.n_heads,
            },
            timings=self.timings,  # this invocation; steps reused from an earlier one take ~0 s
            **extra,
        )
        if self.fmts:
            self.manifest.update(fmt=self.fmts, fmt_info=self.fmt_infos)
        if self.splits:
            self.manifest["splits"] = {
                n: {"rank": [e.id for e in r], "eval": [e.id for e in ev]}
                for n, (r, ev) in self.splits.items()
            }
        if self.metrics:
            self.manifest["metrics"] = {m.name: m.label for m in self.metrics}
        RunWriter(self.folder).manifest(self.manifest)


Step = Callable[[Experiment], Any]


def progress_bar(total: int, desc: str, quiet: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, disable=quiet, leave=False)
