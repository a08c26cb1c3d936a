"""The pipeline's steps: baseline, attribute, sweep, tables, report.

Each step is a function ``step(exp: Experiment) -> what it made``. It reads what earlier steps put
on the :class:`Experiment` (the run's shared state), writes its artifacts through the run folder
(:class:`~interp_heads.folder.RunFolder`), and is idempotent: its units of work carry resume keys,
so a rerun reuses what is stored and recomputes only what is missing or made under other inputs.
``run`` runs all of them (:data:`STEPS`); ``attribute`` and ``ablate`` run subsets after filling
the state they take from the command line. :func:`run_steps` times each step and rewrites the
manifest after it, so the manifest always says how far a run got.

The sweep's unit of work is one condition (task, selection, k, seed), run and stored by
``interp_heads.sweep.run_sweep``; executors run those units elsewhere and hand back their records.
"""

from __future__ import annotations

import hashlib
import json
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from interp_heads import faults, resume
from interp_heads.errors import PipelineError
from interp_heads.folder import RunFolder
from interp_heads.known_run import known_step
from interp_heads.provenance import git_hash, versions
from interp_heads.ranking_checks import (
    needs_verification,
    record_verification,
    verify_m,
    verify_stored,
)
from interp_heads.ranking_stability import halves_for_stored, record_stability
from interp_heads.runfolder import StoreWarning
from interp_heads.tasks.schema import Task


@dataclass
class Experiment:
    """What the steps share: inputs (config, model, tasks, formats, metrics) and what steps made."""

    config: Any  # RunConfig (run) or the command's settings (attribute, ablate)
    folder: RunFolder
    model: Any
    tasks: dict[str, Task] = field(default_factory=dict)
    fmts: dict[str, str] = field(default_factory=dict)
    fmt_infos: dict[str, dict] = field(default_factory=dict)
    metrics: list = field(default_factory=list)
    ks: list[int] = field(default_factory=list)
    quiet: bool = False
    force: bool = False
    digest: str = ""
    batch_size: int = 16
    sweep_config: Any = None  # SweepConfig
    sweep_options: dict = field(default_factory=dict)  # extra run_sweep arguments (executor...)
    provenance: dict = field(default_factory=dict)  # added to every new HeadScores' provenance
    # made by the steps
    base_rows: list[dict] = field(default_factory=list)
    splits: dict[str, tuple[Task, Task]] = field(default_factory=dict)  # task: (rank, eval)
    rankings: dict = field(default_factory=dict)  # task: HeadScores or ordered head list
    result: Any = None  # SweepResult
    timings: dict[str, float] = field(default_factory=dict)
    manifest: dict = field(default_factory=dict)

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
            config=self.config.to_dict() if hasattr(self.config, "to_dict") else self.config,
            config_digest=self.digest,
            status=status,
            ks=self.ks or None,
            model={
                **dict(getattr(model, "interp_heads_source", {}) or {}),
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
        self.folder.write_manifest(self.manifest)


Step = Callable[[Experiment], Any]


def _bar(total: int, desc: str, quiet: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, disable=quiet, leave=False)


# --------------------------------------------------------------------------- baseline
def baseline_step(exp: Experiment) -> pd.DataFrame:
    """Unmasked accuracy, the correctly answered examples and the rank/eval split of every task.

    Every task is computed and checked before anything is written (a task left without examples
    is bad input and must not change the folder); then baseline entries and ``baseline.csv``.
    """
    cfg, new = exp.config, {}
    n_examples = sum(len(t) for t in exp.tasks.values())
    with _bar(n_examples, "baseline examples", exp.quiet or not cfg.filter_correct) as bar:
        for name, task in exp.tasks.items():
            t = time.perf_counter()
            row, ok, new[name] = _baseline_of(exp, name, task)
            keep = task.subset(ids=ok)
            rank, rest = keep.split(cfg.n_rank)
            evalset = rest.subset(n=cfg.n_eval)
            if len(rank) == 0 or len(evalset) == 0:
                raise PipelineError(
                    f"task {name!r}: {len(keep)} example(s) left after filtering; need more than "
                    f"n_rank={cfg.n_rank}"
                )
            _check_attribution_inputs(cfg, name, rank)
            row.update(n_rank=len(rank), n_eval=len(evalset))
            exp.base_rows.append(row)
            exp.splits[name] = (rank, evalset)
            exp.timings[f"{name}/baseline"] = time.perf_counter() - t
            bar.update(len(task))
    for name, entry in new.items():
        if entry is not None:
            exp.folder.write_baseline(name, entry)
    frame = pd.DataFrame(exp.base_rows)
    exp.folder.write_frame(exp.folder.baseline_csv, frame)
    return frame


def _baseline_of(exp: Experiment, name: str, task: Task) -> tuple[dict, list[str], dict | None]:
    """The baseline row, the correct ids, and a new resume entry to store (None: reused)."""
    cfg, fmt = exp.config, exp.fmts[name]
    if not cfg.filter_correct:
        return {"task": name, "n_examples": len(task)}, [e.id for e in task], None
    key = resume.baseline_key(
        resume.model_fingerprint(exp.model),
        _rows(exp.model, task, fmt),
        max_new_tokens=cfg.max_new_tokens,
        batch_size=cfg.batch_size,
        decoding="greedy",
    )
    cached = _verified_baseline(exp.folder, name, task)
    if cached.get("key") == key:
        return cached["row"], cached["ok"], None
    row, ok = baseline(exp.model, task, cfg, fmt)
    return row, ok, {"key": key, "row": dict(row), "ok": ok}


def baseline(model, task: Task, cfg, fmt: str | None = None) -> tuple[dict, list[str]]:
    """Unmasked generations (``fmt=None``: the task's own format); the baseline row and the correct ids."""
    from interp_heads.tasks import evaluate_baseline

    res = evaluate_baseline(
        model, task, fmt=fmt, max_new_tokens=cfg.max_new_tokens, batch_size=cfg.batch_size
    )
    ok = [i for i, c in zip(res.ids, res.correct, strict=True) if c]
    return {
        "task": task.name,
        "n_examples": len(task),
        "n_correct": len(ok),
        "accuracy": len(ok) / len(task),
    }, ok


def _verified_baseline(folder: RunFolder, name: str, task: Task) -> dict:
    entry = folder.read_baseline(name)
    if entry is None:
        return {}
    if not set(entry["ok"]) <= {e.id for e in task}:
        warnings.warn(
            f"{folder.baseline_entry(name)}: names examples the task does not have; ignored, "
            "it will be recomputed",
            StoreWarning,
            stacklevel=2,
        )
        return {}
    return entry


def _check_attribution_inputs(cfg, name: str, rank: Task) -> None:
    from interp_heads.attribution.api import NEEDS_CORRUPTED, default_method
    from interp_heads.vocab import MEAN_REFINED

    method = default_method(rank) if cfg.attribution == "auto" else cfg.attribution
    needs = method in NEEDS_CORRUPTED or (cfg.refine and method not in MEAN_REFINED)
    if cfg.rivals and method != "ablation_atp":
        raise PipelineError(
            f"task {name!r}: rivals needs attribution 'ablation_atp'; "
            f"{cfg.attribution!r} means {method!r} for this task"
        )
    if cfg.exact_layers and method != "ablation_atp":
        raise PipelineError(
            f"task {name!r}: exact_layers needs attribution 'ablation_atp'; "
            f"{cfg.attribution!r} means {method!r} for this task"
        )
    if needs and not rank.has_corrupted:
        raise PipelineError(
            f"task {name!r} has no corrupted prompts, needed by attribution {cfg.attribution!r}"
        )


def _rows(model, task: Task, fmt: str) -> str:
    """Digest of a task's rows and of the prompts the model sees (part of every resume key)."""
    from interp_heads.prompts import render

    return resume.rows_digest(task, render(model, [e.prompt for e in task], fmt=fmt))


# --------------------------------------------------------------------------- attribute
def attribute_step(exp: Experiment) -> dict:
    """Every task's ``HeadScores`` on its rank split (stored per task, reused when inputs match)."""
    from interp_heads.attribution import attribute_heads

    cfg = exp.config
    if str(cfg.attribution) == "probe":  # one probe over all tasks
        from interp_heads.probe_step import probe_attribute_step

        return probe_attribute_step(exp)
    with _bar(len(exp.splits), "attribution", exp.quiet) as bar:
        for name, (rank, _) in exp.splits.items():
            t = time.perf_counter()
            settings = {
                "method": str(cfg.attribution),
                "refine": cfg.refine,
                "exact_layers": cfg.exact_layers,
                "batch_size": cfg.batch_size,
                "fmt": exp.fmts[name],
                "ablation": str(cfg.ablation),
            }
            if cfg.rivals:  # absent at 0: the keys of folders made before it stay valid
                settings["rivals"] = cfg.rivals
            fp = resume.model_fingerprint(exp.model)
            key = resume.attribution_key(fp, _rows(exp.model, rank, exp.fmts[name]), **settings)
            scores = exp.folder.load_scores(name, key)  # None: absent, damaged or other inputs
            m = verify_m(cfg)
            if scores is None:
                scores = attribute_heads(exp.model, rank, **settings, verify=m or None)
                scores.provenance["resume_key"] = key
                scores.provenance.update(exp.provenance)
                record_stability(exp, name, scores)
                exp.folder.save_scores(name, scores)
            else:
                if needs_verification(scores, m):
                    verify_stored(exp, name, rank, scores, m)
                changed = halves_for_stored(exp, rank, scores, settings)
                if record_stability(exp, name, scores) or changed:
                    exp.folder.save_scores(name, scores)
            exp.rankings[name] = scores
            exp.timings[f"{name}/attribution"] = time.perf_counter() - t
            record_verification(exp, name, scores, m)
            bar.update(1)
    exp.folder.write_rankings(exp.rankings)
    return exp.rankings


# --------------------------------------------------------------------------- sweep, tables, report
def sweep_step(exp: Experiment):
    """Mask TopK and random heads on every task's eval split while generating; score the answers."""
    from interp_heads.sweep import run_sweep

    result = run_sweep(
        exp.model,
        exp.eval_tasks,
        exp.rankings,
        exp.sweep_config,
        exp.metrics,
        batch_size=exp.batch_size,
        out_dir=exp.folder.root,
        force=exp.force,
        progress=not exp.quiet,
        **exp.sweep_options,
    )
    exp.timings.update({f"{n}/sweep": s for n, s in result.timings.items()})
    from interp_heads.conditions import condition_key

    done = result.generations[["task", "selection", "k", "seed"]].drop_duplicates()
    exp.manifest.setdefault("files", {})["conditions"] = sorted(
        condition_key(t, sel, int(k), int(seed)) for t, sel, k, seed in done.itertuples(index=False)
    )
    exp.manifest["metric_cache"] = getattr(result, "metric_cache", {})  # distinct answers, once
    if getattr(exp.sweep_config, "elbow", False):
        from interp_heads.elbow import elbow_k

        exp.manifest["elbow_k"] = {n: elbow_k(r) for n, r in exp.rankings.items()}
    exp.result = result
    return result


def tables_step(exp: Experiment) -> None:
    """``sweep.parquet``, ``summary``, ``significance.csv`` and ``generations.jsonl``."""
    from interp_heads.report import write_sweep_outputs

    write_sweep_outputs(exp.folder.root, exp.result, exp.eval_tasks)


def report_step(exp: Experiment):
    """Figures and ``index.html`` (also ``interp-heads report DIR`` later, without the model)."""
    from interp_heads import lifecycle
    from interp_heads.report import build_report

    written: list = []
    index = build_report(exp.folder.root, written=written)
    lifecycle.note_outputs(exp.manifest, exp.folder, written)
    return index


STEPS: dict[str, Step] = {
    "baseline": baseline_step,
    "attribute": attribute_step,
    "known": known_step,
    "sweep": sweep_step,
    "tables": tables_step,
    "report": report_step,
}


def run_steps(exp: Experiment, names: list[str], start: float | None = None) -> dict[str, Any]:
    """Run the named steps in order; time each and rewrite the manifest after it.

    The manifest records the planned steps (``plan``) and those finished in this invocation under
    this config (``steps``), so the page the report step draws knows which of the folder's tables
    are this run's (a table left by an earlier config is not) and which step finished last. It is
    written before the first step too (``lifecycle.start``), and lists every table, figure and
    page the steps wrote (``files.outputs``): a later ``--force`` run retires exactly those.
    """
    from interp_heads import lifecycle

    start = time.perf_counter() if start is None else start
    made: dict[str, Any] = {}
    with lifecycle.started(exp, names):  # "started" before any step; --force retires
        for i, name in enumerate(names):
            t = time.perf_counter()
            faults.point(f"step:{name}")
            made[name] = STEPS[name](exp)
            lifecycle.note_outputs(exp.manifest, exp.folder, exp.folder.step_outputs(name))
            if name in ("sweep", "report"):
                exp.timings[name] = time.perf_counter() - t
            exp.timings["total"] = time.perf_counter() - start
            exp.manifest["steps"].append(name)
            lifecycle.finish_retiring(exp)
            exp.write_manifest("complete" if i == len(names) - 1 else "running")
    return made


def task_hash(task: Task) -> str:
    blob = json.dumps([e.to_dict() for e in task], sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()
