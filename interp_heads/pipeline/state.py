"""``Experiment``: a run's inputs (config, model, tasks, run folder) and its record (manifest, timings,
artefacts)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

from interp_heads.config.run_config import RunConfig
from interp_heads.model_info import source_of
from interp_heads.pipeline.artefacts import Artefacts
from interp_heads.run import Manifest, RunWriter
from interp_heads.store.folder import RunFolder
from interp_heads.store.provenance import git_hash, versions
from interp_heads.tasks.schema import Task


@dataclass
class Experiment:
    """A run's inputs (config, model, tasks, folder), how this invocation runs (``quiet``,
    ``notes``, ``force``, the executor in ``sweep_options``) and its record: the manifest and the
    timings it writes, and the artefacts the plan and the steps made (``artefacts``: stored only
    by ``pipeline.steps.run_steps``, from what each step returns under its declared names; a step
    reads them through its declared inputs, never from here)."""

    config: RunConfig
    folder: RunFolder
    model: Any  # the backend's model class (HookedTransformer, TransformerBridge)
    tasks: dict[str, Task] = field(default_factory=dict)
    quiet: bool = False  # no progress bars
    notes: bool = False  # say what was chosen and left out on stderr (attribute, ablate)
    force: bool = False
    digest: str = ""
    sweep_options: dict = field(default_factory=dict)  # extra run_sweep arguments (executor...)
    artefacts: Artefacts = field(default_factory=Artefacts)
    timings: dict[str, float] = field(default_factory=dict)
    manifest: Manifest = field(default_factory=Manifest)  # changed by ``with_updates`` only

    def say(self, line: str) -> None:
        """A note for the user on stderr (what was chosen, what was left out), when asked for."""
        if self.notes:
            print(line, file=sys.stderr)

    def write_manifest(self, status: str, **extra) -> None:
        """The one manifest writer: inputs, provenance, splits, timings, and ``status``."""
        model, made = self.model, self.artefacts
        m = self.manifest
        if m.versions is None:  # once per process (a git subprocess, package metadata)
            m = m.with_updates(versions=versions(), git=git_hash())
        if m.files is None:  # the tool's files listed by an earlier invocation
            m = m.with_updates(files=Manifest.from_dict(self.folder.read_manifest()).files or {})
        m = m.with_updates(
            config=self.config.to_dict(),
            config_digest=self.digest,
            status=status,
            ks=made.get("ks") or None,
            model={
                **source_of(model),
                "n_layers": model.cfg.n_layers,
                "n_heads": model.cfg.n_heads,
            },
            timings=self.timings,  # this invocation; steps reused from an earlier one take ~0 s
            **extra,
        )
        if made.get("fmts"):
            m = m.with_updates(fmt=made.get("fmts"), fmt_info=made.get("fmt_infos"))
        if made.get("splits"):
            m = m.with_updates(
                splits={
                    n: {"rank": [e.id for e in r], "eval": [e.id for e in ev]}
                    for n, (r, ev) in made.get("splits").items()
                }
            )
        if made.get("metrics"):
            m = m.with_updates(metrics={x.name: x.label for x in made.get("metrics")})
        self.manifest = m
        RunWriter(self.folder).manifest(self.manifest)


def progress_bar(total: int, desc: str, quiet: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, disable=quiet, leave=False)
