"""A run folder written: :class:`RunWriter`, the write side of ``run/`` beside ``Run``.

Every file goes through the store (``store.atomic``: a temporary file renamed into place, no
link followed), with its name from ``store.layout``. The manifest is written whole, from a
``Manifest`` or the dict the pipeline keeps (``pipeline.record.RunRecord.write_manifest``)."""

from __future__ import annotations

import json
import os

import pandas as pd

from interp_heads.run.manifest import Manifest
from interp_heads.store import atomic
from interp_heads.store.folder import RunFolder


class RunWriter:
    """Writes what a run's steps return into its folder."""

    def __init__(self, folder: RunFolder | str | os.PathLike):
        self.folder = folder if isinstance(folder, RunFolder) else RunFolder(folder)

    def manifest(self, manifest: Manifest | dict, sort_keys: bool = False) -> None:
        """``manifest.json``, whole and atomic (a ``Manifest`` as its ``to_dict``);
        ``sort_keys``: its keys sorted (a study's own manifest, ``ground_truth``'s)."""
        d = manifest.to_dict() if isinstance(manifest, Manifest) else manifest
        if sort_keys:
            from interp_heads.store.atomic import write_atomic  # looked up when it writes

            write_atomic(self.folder.manifest, json.dumps(d, indent=1, sort_keys=True))
        else:
            self.folder.write_manifest(d)

    def note_report(self, paths) -> None:
        """List the files ``report DIR`` wrote (``paths``) in the folder's manifest as the tool's
        (a later ``--force`` run retires them); a folder without a manifest of the tool's (no
        ``config_digest``) is left as it is, and an unchanged list is not rewritten."""
        from interp_heads.store.lifecycle import note_outputs

        manifest = Manifest.from_dict(self.folder.read_manifest())
        if manifest.config_digest is None:
            return
        noted = note_outputs(manifest, self.folder, paths)
        if noted.files["outputs"] != list((manifest.files or {}).get("outputs") or []):
            self.manifest(noted)

    def sweep_outputs(self, result, eval_tasks: dict | None = None, n_boot: int = 1000) -> None:
        """``sweep.parquet`` (records), ``summary.parquet``/``.csv``, ``significance.csv``,
        ``generations.jsonl`` and ``prompts.jsonl`` (each evaluated prompt as the model saw it)
        of a sweep's result."""
        folder = self.folder
        folder.write_frame(folder.sweep_parquet, result.records)
        summary = result.summary(n_boot=n_boot)
        folder.write_frame(folder.summary_parquet, summary)
        folder.write_frame(
            folder.summary_csv, summary.assign(draw_means=summary["draw_means"].map(json.dumps))
        )
        folder.write_frame(folder.significance_csv, result.significance())
        gens = result.generations.copy()
        if eval_tasks:
            ref = {(name, e.id): e for name, task in eval_tasks.items() for e in task}
            exs = [ref.get((t, i)) for t, i in zip(gens.task, gens.example_id, strict=True)]
            gens["question"] = [getattr(e, "question", "") for e in exs]
            gens["answer"] = [getattr(e, "answer", "") for e in exs]
            for key in ("n_sentences", "depth", "context_words"):  # needle-in-a-haystack rows
                if any(e is not None and key in e.meta for e in exs):
                    gens[key] = [e.meta.get(key) if e is not None else None for e in exs]
        with atomic(folder.generations) as tmp:
            gens.to_json(tmp, orient="records", lines=True, force_ascii=False)
        rows = [
            {"task": task, "example_id": str(ex), "prompt": prompt}
            for task, prompts in (getattr(result, "prompts", None) or {}).items()
            for ex, prompt in prompts.items()
        ]
        if rows:  # the prompts as the model saw them (generations.jsonl keeps its columns)
            with atomic(folder.prompts) as tmp:
                pd.DataFrame(rows).to_json(tmp, orient="records", lines=True, force_ascii=False)
