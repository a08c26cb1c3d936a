"""The scripted ablation run: baseline, attribution, sweep, figures and report in one folder.

``run_pipeline(RunConfig.from_toml("configs/seed_figure.toml"), "runs/demo")`` loads the model,
then for every task keeps the correctly answered examples, ranks the heads on the first
``n_rank`` of them, sweeps ``k x selection x seed`` on the rest (up to ``n_eval``) and writes the
run directory (see ``docs/cli.md``). Everything is checked before the first file is written, so a
bad input never damages an earlier run; an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import warnings
from pathlib import Path

import pandas as pd

from interp_heads import resume, threads, validation
from interp_heads.config import RunConfig, check_ks
from interp_heads.loading import PipelineError, load_any_model, load_any_task
from interp_heads.provenance import git_hash, versions
from interp_heads.runfolder import (
    StoreWarning,
    atomic,
    prepare_out_dir,
    read_entry,
    releases_locks,
    write_atomic,
    write_entry,
)
from interp_heads.tasks.schema import Task

__all__ = [
    "PipelineError",
    "RunConfig",
    "check_ks",
    "git_hash",
    "load_any_model",
    "load_any_task",
    "prepare_out_dir",
    "run_pipeline",
    "versions",
    "write_atomic",
]


# --------------------------------------------------------------------------- loading
def baseline(model, task: Task, cfg: RunConfig, fmt: str | None = None) -> tuple[dict, list[str]]:
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


def task_formats(config: RunConfig, model, tasks: dict) -> tuple[dict[str, str], dict[str, dict]]:
    """Each task's prompt format (the config's, else declared by the task, else measured)."""
    from interp_heads.tasks.fmt import resolve_format

    fmts, infos = {}, {}
    for name, task in tasks.items():
        fmts[name], infos[name] = resolve_format(
            model,
            task,
            config.fmt,
            max_new_tokens=config.max_new_tokens,
            batch_size=config.batch_size,
        )
    return fmts, infos


def _bar(total: int, desc: str, quiet: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, disable=quiet, leave=False)


# --------------------------------------------------------------------------- the run
@releases_locks
def run_pipeline(
    config: RunConfig, out_dir: str | os.PathLike, force: bool = False, quiet: bool = False
) -> Path:
    """Run everything and write the run directory; returns the path of ``index.html``.

    Raises:
        PipelineError: a bad input, before anything is written to ``out_dir``.
    """
    import torch

    from interp_heads.attribution import attribute_heads
    from interp_heads.metrics import MetricUnavailable, resolve_metrics
    from interp_heads.report import build_report, write_sweep_outputs
    from interp_heads.sweep import SweepConfig, run_sweep

    out_dir = Path(out_dir)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    torch.manual_seed(config.seed)
    model = load_any_model(config.model, config.device)
    if config.threads is not None:
        threads.configure(config.threads)
    threads.watch(model)  # else share the cores with interp-heads processes that start later
    timings["load_model"] = time.perf_counter() - t0
    n_total = model.cfg.n_layers * model.cfg.n_heads
    ks = config.resolved_ks(n_total)
    tasks = {}
    for spec in config.tasks:
        task = load_any_task(spec).subset(n=config.max_examples)
        if task.name in tasks:
            raise PipelineError(f"task {task.name!r} is listed twice")
        tasks[task.name] = task
    for (
        task
    ) in tasks.values():  # before task_formats generates: the longest rendering unless fmt is given
        validation.check_prompt_lengths(
            model, task, config.fmt or task.fmt, config.max_new_tokens, corrupted=task.has_corrupted
        )
    fmts, fmt_infos = task_formats(config, model, tasks)
    prepare_out_dir(out_dir, config.digest(), force)  # before any long step: fail fast
    # Phase 1 (no writes): baselines, filtering, splits.
    base_rows, splits, new_cache = [], {}, {}
    with _bar(len(tasks), "baseline", quiet or not config.filter_correct) as bar:
        for name, task in tasks.items():
            _baseline_step(
                config,
                model,
                name,
                task,
                fmts[name],
                out_dir,
                base_rows,
                splits,
                new_cache,
                timings,
            )
            bar.update(1)
    try:
        metrics = resolve_metrics(config.metrics, config.comet_model)
    except (MetricUnavailable, ValueError) as exc:
        raise PipelineError(str(exc).splitlines()[0]) from None
    # Phase 2: write.
    digest = config.digest()
    # With force, nothing is deleted: each unit's resume key decides what is recomputed.
    earlier = _read_json(out_dir / "manifest.json")
    history = (
        earlier.get("earlier_timings", []) + [earlier.get("timings", {})]
        if earlier.get("config_digest") == digest
        else []
    )
    manifest = {
        "config": config.to_dict(),
        "config_digest": digest,
        "status": "running",
        "ks": ks,
        "fmt": fmts,
        "fmt_info": fmt_infos,
        "versions": versions(),
        "git": git_hash(),
        "model": {
            **dict(getattr(model, "interp_heads_source", {}) or {}),
            "n_layers": model.cfg.n_layers,
            "n_heads": model.cfg.n_heads,
        },
        "data": {
            n: {"source": t.source, "sha256": t.sha256 or _task_hash(t), "n_examples": len(t)}
            for n, t in tasks.items()
        },
        "splits": {
            n: {"rank": [e.id for e in r], "eval": [e.id for e in ev]}
            for n, (r, ev) in splits.items()
        },
        "seeds": {"torch": config.seed, "random_draws": config.seeds},
        "metrics": {m.name: m.label for m in metrics},
        "timings": timings,  # this invocation; steps reused from an interrupted run take ~0 s
        "earlier_timings": history,
    }
    write_atomic(out_dir / "manifest.json", json.dumps(manifest, indent=1, default=str))
    with atomic(out_dir / "baseline.csv") as tmp:
        pd.DataFrame(base_rows).to_csv(tmp, index=False)
    (out_dir / "baseline").mkdir(exist_ok=True)
    for name, entry in new_cache.items():  # reused when the run is resumed
        write_entry(out_dir / "baseline" / f"{name}.json", entry)
    rankings = {}
    (out_dir / "attribution").mkdir(exist_ok=True)
    with _bar(len(splits), "attribution", quiet) as bar:
        for name, (rank, _) in splits.items():
            t = time.perf_counter()
            path = out_dir / "attribution" / f"{name}.json"
            settings = {
                "method": config.attribution,
                "refine": config.refine,
                "batch_size": config.batch_size,
                "fmt": fmts[name],
                "ablation": config.ablation,
            }
            key = resume.attribution_key(
                resume.model_fingerprint(model), _rows(model, rank, fmts[name]), **settings
            )
            scores = resume.load_scores(
                path, key
            )  # None when absent, damaged (warned) or of other inputs
            if scores is None:
                scores = attribute_heads(
                    model,
                    rank,
                    config.attribution,
                    refine=config.refine,
                    batch_size=config.batch_size,
                    fmt=fmts[name],
                    ablation=config.ablation,
                )
                scores.provenance["resume_key"] = key
                scores.save(path)
            rankings[name] = scores
            timings[f"{name}/attribution"] = time.perf_counter() - t
            bar.update(1)
    frame = pd.concat([s.to_frame() for s in rankings.values()], ignore_index=True)
    with atomic(out_dir / "attribution.parquet") as tmp:
        frame.to_parquet(tmp, index=False)
    with atomic(out_dir / "ranking.csv") as tmp:
        frame.sort_values(["task", "rank"])[
            ["task", "rank", "label", "layer", "head", "score", "method"]
        ].to_csv(tmp, index=False)
    sweep_cfg = SweepConfig(
        ks=ks,
        selections=list(config.selections),
        seeds=config.seeds,
        method=config.ablation,
        max_new_tokens=config.max_new_tokens,
        metrics=list(config.metrics),
        fmt=next(iter(set(fmts.values()))) if len(set(fmts.values())) == 1 else None,
    )
    t = time.perf_counter()
    result = run_sweep(
        model,
        {n: ev for n, (_, ev) in splits.items()},
        rankings,
        sweep_cfg,
        metrics,
        batch_size=config.batch_size,
        out_dir=out_dir,
        force=force,
        progress=not quiet,
    )
    timings["sweep"] = time.perf_counter() - t
    timings.update({f"{n}/sweep": s for n, s in result.timings.items()})
    manifest["metric_cache"] = getattr(result, "metric_cache", {})  # distinct answers scored once
    t = time.perf_counter()
    write_sweep_outputs(out_dir, result, {n: ev for n, (_, ev) in splits.items()})
    timings["total"] = time.perf_counter() - t0
    manifest.update(status="complete", timings=timings)
    write_atomic(out_dir / "manifest.json", json.dumps(manifest, indent=1, default=str))
    index = build_report(out_dir)
    timings["report"] = time.perf_counter() - t
    timings["total"] = time.perf_counter() - t0
    write_atomic(out_dir / "manifest.json", json.dumps(manifest, indent=1, default=str))
    return index


def _baseline_step(
    config, model, name, task, fmt, out_dir, base_rows, splits, new_cache, timings
) -> None:
    """Baseline (cached in ``out_dir/baseline``), filtering and the rank/eval split of one task."""
    from interp_heads.attribution.api import NEEDS_CORRUPTED, default_method

    t = time.perf_counter()
    if not config.filter_correct:
        row, ok = {"task": name, "n_examples": len(task)}, [e.id for e in task]
    else:
        key = _baseline_key(config, task, fmt, model)
        cached = _read_baseline(out_dir / "baseline" / f"{name}.json", task)
        if cached.get("key") == key:
            row, ok = cached["row"], cached["ok"]
        else:
            row, ok = baseline(model, task, config, fmt)
            new_cache[name] = {"key": key, "row": row, "ok": ok}
    keep = task.subset(ids=ok)
    rank, rest = keep.split(config.n_rank)
    evalset = rest.subset(n=config.n_eval)
    if len(rank) == 0 or len(evalset) == 0:
        raise PipelineError(
            f"task {name!r}: {len(keep)} example(s) left after filtering; need more than n_rank={config.n_rank}"
        )
    method = default_method(rank) if config.attribution == "auto" else config.attribution
    if (
        method in NEEDS_CORRUPTED or (config.refine and method != "ablation_atp")
    ) and not rank.has_corrupted:
        raise PipelineError(
            f"task {name!r} has no corrupted prompts, needed by attribution {config.attribution!r}"
        )
    row.update(n_rank=len(rank), n_eval=len(evalset))
    base_rows.append(row)
    splits[name] = (rank, evalset)
    timings[f"{name}/baseline"] = time.perf_counter() - t


def _baseline_key(config: RunConfig, task: Task, fmt: str, model) -> str:
    return resume.baseline_key(
        resume.model_fingerprint(model),
        _rows(model, task, fmt),
        max_new_tokens=config.max_new_tokens,
        batch_size=config.batch_size,
        decoding="greedy",
    )


def _rows(model, task: Task, fmt: str) -> str:
    """Digest of a task's rows and of the prompts the model sees (part of every resume key)."""
    from interp_heads.prompts import render

    return resume.rows_digest(task, render(model, [e.prompt for e in task], fmt=fmt))


def _read_baseline(path: Path, task: Task) -> dict:
    """A verified baseline cache entry (damaged ones are warned about and ignored), else ``{}``."""
    entry = read_entry(path, {"key": str, "row": dict, "ok": list})
    if entry is None:
        return {}
    if not set(entry["ok"]) <= {e.id for e in task}:
        warnings.warn(
            f"{path}: names examples the task does not have; ignored, it will be recomputed",
            StoreWarning,
            stacklevel=2,
        )
        return {}
    return entry


def _read_json(path: Path) -> dict:
    try:
        d = json.loads(path.read_text())
    except (OSError, ValueError):  # absent, truncated, invalid UTF-8
        return {}
    return d if isinstance(d, dict) else {}


def _task_hash(task: Task) -> str:
    blob = json.dumps([e.to_dict() for e in task], sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()
