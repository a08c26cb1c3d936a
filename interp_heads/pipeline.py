"""The scripted ablation run: baseline, attribution, sweep, figures and report in one folder.

``run_pipeline(RunConfig.from_toml("configs/seed_figure.toml"), "runs/demo")`` loads the model,
then for every task keeps the correctly answered examples, ranks the heads on the first
``n_rank`` of them, sweeps ``k x selection x seed`` on the rest (up to ``n_eval``) and writes the
run directory (see ``docs/cli.md``). Everything is checked before the first file is written, so a
bad input never damages an earlier run; an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
import tomllib
import types
import typing
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pandas as pd

from interp_heads import resume, threads, validation
from interp_heads.report_io import (
    PipelineError,
    git_hash,
    load_any_model,
    load_any_task,
    prepare_out_dir,
    versions,
    write_atomic,
)
from interp_heads.runfolder import StoreWarning, atomic, read_entry, releases_locks, write_entry
from interp_heads.tasks.schema import BUILTIN_TASKS, Task

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

ABLATIONS = ("zero", "mean", "resample")
PLACEMENT = ("executor", "ray_address", "n_workers", "n_devices")  # where work runs, not what
SELECTIONS = ("topk", "randomk", "layermatched")


@dataclass
class RunConfig:
    """Everything that determines a run's results (hashed into ``manifest.json``).

    Attributes:
        model: model spec for ``load_model`` (``"tiny"``: the random test model).
        tasks: built-in task names or paths of task JSONL files.
        max_examples: read at most this many examples per task (None: all) before filtering.
        n_rank: correctly answered examples used for attribution (the first ones).
        n_eval: at most this many of the remaining examples are evaluated under masking.
        attribution: attribution method (``auto``: ``atp`` for tasks with corrupted prompts, else
            ``ablation_atp``; or ``atp``, ``ablation_atp``, ``exact``, ``gradxact``, ``headmask``...).
        refine: re-score the top ``refine`` heads exactly (None: no refinement).
        ks: numbers of masked heads.
        scaled_ks: optional fractions of all heads, added to ``ks`` (e.g. ``[0.05, 0.1]``).
        selections: ``topk``, ``randomk``, ``layermatched``.
        seeds: random draws per random selection and k.
        ablation: ``mean``, ``zero`` or ``resample``.
        metrics: metric names (``accuracy``, ``comet``, ``chrf``, ``minilm_cosine``).
        comet_model: COMET checkpoint name or path (None: default, falls back offline).
        max_new_tokens: generation length.
        batch_size: generation and attribution batch size.
        seed: torch seed set before the run.
        filter_correct: keep only examples the unmasked model answers correctly.
        fmt: prompt format (``auto``, ``chat``, ``plain``; None: each task's own, e.g. ``plain``).
        device: ``cpu``, ``cuda``... (None: CUDA when present).
        threads: torch CPU threads (None: the cores shared among running interp-heads processes).
        executor: where the sweep's masked generations run: ``local`` (this process) or ``ray``
            (actors on a Ray cluster; docs/scale.md). Results are the same either way.
        ray_address: Ray cluster to join (None: ``RAY_ADDRESS`` if set, else a local instance).
        n_workers: Ray actors (None: one per GPU group of the cluster, else one per CPU).
        n_devices: GPUs one model is split over (layers spread by TransformerLens), for models
            too large for one GPU; with Ray, GPUs per actor.
    """

    model: str = "smollm2-135m"
    tasks: list[str] = field(default_factory=lambda: list(BUILTIN_TASKS))
    max_examples: int | None = None
    n_rank: int = 24
    n_eval: int = 100
    attribution: str = "auto"
    refine: int | None = None
    ks: list[int] = field(default_factory=lambda: [16, 32, 64, 128])
    scaled_ks: list[float] | None = None
    selections: list[str] = field(default_factory=lambda: ["topk", "randomk", "layermatched"])
    seeds: int = 5
    ablation: str = "mean"
    metrics: list[str] = field(default_factory=lambda: ["accuracy", "comet"])
    comet_model: str | None = None
    max_new_tokens: int = 16
    batch_size: int = 16
    seed: int = 0
    filter_correct: bool = True
    fmt: str | None = None
    device: str | None = None
    threads: int | None = (
        None  # torch CPU threads; not part of the digest (results do not depend on it)
    )
    executor: str = "local"  # this and the three below: where work runs, not part of the digest
    ray_address: str | None = None
    n_workers: int | None = None
    n_devices: int = 1

    def __post_init__(self):
        self.validate()

    @classmethod
    def from_dict(cls, d: dict, source: str = "config") -> RunConfig:
        """Build from a mapping, refusing unknown keys and wrong types (one-line errors)."""
        known = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - set(known))
        if unknown:
            raise PipelineError(
                f"{source}: unknown key(s) {', '.join(unknown)}; known: {', '.join(known)}"
            )
        hints = typing.get_type_hints(cls)
        for key, value in d.items():
            if not _type_ok(value, hints[key]):
                raise PipelineError(
                    f"{source}: {key} = {value!r} has the wrong type (expected {_type_name(hints[key])})"
                )
        return cls(**d)

    @classmethod
    def from_toml(cls, path: str | os.PathLike) -> RunConfig:
        """Read a TOML file (flat keys, or under a ``[run]`` table)."""
        path = Path(path)
        try:
            d = tomllib.loads(path.read_text())
        except FileNotFoundError:
            raise PipelineError(f"config file {str(path)!r} not found") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise PipelineError(f"malformed config {str(path)!r}: {exc}") from None
        if set(d) == {"run"} and isinstance(d["run"], dict):
            d = d["run"]
        return cls.from_dict(d, source=str(path))

    def validate(self, n_total_heads: int | None = None) -> None:
        """Check values; with ``n_total_heads`` also that every k fits the model."""
        from interp_heads.attribution import METHODS
        from interp_heads.metrics.registry import METRIC_NAMES

        if not self.tasks:
            raise PipelineError("config: tasks is empty")
        for name in (
            "n_rank",
            "n_eval",
            "seeds",
            "max_new_tokens",
            "batch_size",
            "max_examples",
            "threads",
            "n_workers",
            "n_devices",
        ):
            if getattr(self, name) is not None and getattr(self, name) <= 0:
                raise PipelineError(f"config: {name} must be > 0, got {getattr(self, name)}")
        if self.attribution not in METHODS:
            raise PipelineError(
                f"config: unknown attribution {self.attribution!r}; use one of {', '.join(METHODS)}"
            )
        if self.refine is not None and self.refine <= 0:
            raise PipelineError(f"config: refine must be > 0, got {self.refine}")
        if self.ablation not in ABLATIONS:
            raise PipelineError(
                f"config: unknown ablation {self.ablation!r}; use one of {', '.join(ABLATIONS)}"
            )
        for sel in self.selections:
            if sel.lower().replace("_", "").replace("-", "") not in SELECTIONS + (
                "layermatchedrandomk",
            ):
                raise PipelineError(
                    f"config: unknown selection {sel!r}; use {', '.join(SELECTIONS)}"
                )
        for m in self.metrics:
            if m.strip().lower() not in METRIC_NAMES + ("minilm",):
                raise PipelineError(f"config: unknown metric {m!r}; use {', '.join(METRIC_NAMES)}")
        if self.fmt not in (None, "auto", "chat", "plain"):
            raise PipelineError(f"config: fmt must be auto, chat or plain, got {self.fmt!r}")
        for f in self.scaled_ks or []:
            if not 0 < f <= 1:
                raise PipelineError(f"config: scaled_ks fraction {f} must be in (0, 1]")
        check_ks(self.ks, n_total_heads)
        validation.check_device(self.device)
        from interp_heads.executor import EXECUTORS

        if self.executor not in EXECUTORS:
            raise PipelineError(
                f"config: unknown executor {self.executor!r}; use one of {', '.join(EXECUTORS)}"
            )

    def resolved_ks(self, n_total_heads: int) -> list[int]:
        """``ks`` plus ``scaled_ks`` turned into head counts, sorted, unique."""
        extra = [max(1, round(f * n_total_heads)) for f in self.scaled_ks or []]
        ks = sorted(set(self.ks) | set(extra))
        check_ks(ks, n_total_heads)
        return ks

    def digest(self) -> str:
        d = asdict(self)
        for key in ("threads", *PLACEMENT):  # speed only
            d.pop(key)
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]


def check_ks(ks, n_total_heads: int | None = None) -> None:
    """Every k must be in ``1..n_total_heads``."""
    if not ks:
        raise PipelineError("ks is empty")
    for k in ks:
        if k <= 0:
            raise PipelineError(f"k={k} must be > 0")
        if n_total_heads is not None and k > n_total_heads:
            raise PipelineError(f"k={k} exceeds the number of heads ({n_total_heads})")


def _type_ok(value, hint) -> bool:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_type_ok(value, a) for a in args)
    if hint is type(None):
        return value is None
    if origin is list:
        return isinstance(value, list) and all(_type_ok(v, args[0]) for v in value)
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


def _type_name(hint) -> str:
    return str(hint).replace("typing.", "")


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
    from interp_heads.executor import open_executor
    from interp_heads.metrics import MetricUnavailable, resolve_metrics
    from interp_heads.report import build_report, write_sweep_outputs
    from interp_heads.sweep import SweepConfig, run_sweep

    out_dir = Path(out_dir)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    torch.manual_seed(config.seed)
    model = load_any_model(config.model, config.device, n_devices=config.n_devices)
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
        "config": asdict(config),
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
    with open_executor(config, model) as executor:  # None: this process
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
            executor=executor,
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
