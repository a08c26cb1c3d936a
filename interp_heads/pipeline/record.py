"""``RunRecord``: what a run records as it goes, apart from its inputs (``pipeline.state``).

The manifest (changed by ``with_updates`` only, written whole by :meth:`RunRecord.write_manifest`),
the timings of this invocation, the config's digest, and the artefacts the plan and the steps
made (``artefacts``: stored only by ``pipeline.steps.run_steps``, from what each step returns
under its declared names; a step reads them through its declared inputs, never from here). A
step is handed the record to note what it measured (``record.note(known_heads=...)``,
``record.timings[...]``); ``run_steps`` and ``store.lifecycle`` write it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from interp_heads.model_info import source_of
from interp_heads.pipeline.artefacts import Artefacts
from interp_heads.run import Manifest, RunWriter
from interp_heads.store.provenance import git_hash, versions


@dataclass
class RunRecord:
    """A run's record: manifest, timings, config digest and artefacts (see the module)."""

    digest: str = ""
    artefacts: Artefacts = field(default_factory=Artefacts)
    timings: dict[str, float] = field(default_factory=dict)
    manifest: Manifest = field(default_factory=Manifest)

    def note(self, **updates) -> None:
        """The manifest with ``updates`` (``Manifest.with_updates``: known keys only)."""
        self.manifest = self.manifest.with_updates(**updates)

    def write_manifest(self, exp, status: str, **extra) -> None:
        """The one manifest writer: ``exp``'s inputs, provenance, splits, timings, and ``status``."""
        model, made = exp.model, self.artefacts
        m = self.manifest
        if m.versions is None:  # once per process (a git subprocess, package metadata)
            m = m.with_updates(versions=versions(), git=git_hash())
        if m.files is None:  # the tool's files listed by an earlier invocation
            m = m.with_updates(files=Manifest.from_dict(exp.folder.read_manifest()).files or {})
        m = m.with_updates(
            config=exp.config.to_dict(),
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
        RunWriter(exp.folder).manifest(self.manifest)
