"""The baseline step: each task's unmasked accuracy, and its split into ranking and evaluation rows.

The correctly answered examples (``filter_correct``) are split in order: the first ``n_rank``
rank the heads, the next (up to ``n_eval``) are evaluated under masking. Each task's baseline is a
resume entry keyed by the model, the rendered rows and the generation settings.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import pandas as pd

from interp_heads.errors import PipelineError
from interp_heads.pipeline.artefacts import Inputs
from interp_heads.pipeline.record import RunRecord
from interp_heads.pipeline.state import Experiment, progress_bar
from interp_heads.store import StoreWarning, resume
from interp_heads.store.folder import RunFolder
from interp_heads.tasks.schema import Task


@dataclass(frozen=True)
class BaselineOutput:
    """``baseline.csv``'s table (``baseline = "all"``; else None)."""

    baseline_table: pd.DataFrame | None


@dataclass(frozen=True)
class Split:
    """What :func:`split_examples` found: each task's ``(rank, eval)`` examples, the baseline
    rows (``baseline = "all"``) and the new baseline resume entries the baseline step stores."""

    splits: dict[str, tuple[Task, Task]]
    base_rows: list[dict]
    baseline_entries: dict


def baseline_step(exp: Experiment, inputs: Inputs, record: RunRecord) -> BaselineOutput:
    """Store what :func:`split_examples` found before the folder was claimed: the baseline
    entries and, with ``baseline = "all"``, ``baseline.csv``."""
    for name, entry in inputs.baseline_entries.items():
        if entry is not None:
            exp.folder.write_baseline(name, entry)
    if exp.config.baseline != "all":
        return BaselineOutput(None)
    frame = pd.DataFrame(inputs.base_rows)
    exp.folder.write_frame(exp.folder.baseline_csv, frame)
    return BaselineOutput(frame)


def split_examples(
    exp: Experiment, record: RunRecord, steps: list[str], fmts: dict, given: dict
) -> Split:
    """The correctly answered examples and the rank/eval split of every task; with
    ``baseline = "all"`` every example's unmasked answer (the base rows). Writes nothing:
    ``pipeline.experiment.build_experiment`` calls it before the folder is claimed, so a task
    left without examples (bad input) is refused before anything changes. ``fmts``: each task's
    prompt format; ``given``: the given rankings by task (their examples are left out); each
    task's time goes to ``record.timings``.

    Only the splits the run's ``steps`` use are filled: rank rows when it ranks heads, eval rows
    when it sweeps.
    """
    cfg, new, base_rows, splits = exp.config, {}, [], {}
    n_rank = cfg.n_rank if "attribute" in steps else 0
    # a method that reads the rows a sweep masks (the probe's probe_rows = "evaluated") needs
    # them in an attribute-only run too: the rows a sweep of this config would evaluate
    reads_eval = _reads_evaluated(cfg)
    n_eval = cfg.n_eval if "sweep" in steps or reads_eval else 0
    n_examples = sum(len(t) for t in exp.tasks.values())
    bars = exp.invocation.quiet or not cfg.filter_correct or cfg.baseline != "all"
    with progress_bar(n_examples, "baseline examples", bars) as bar:
        for name, task in exp.tasks.items():
            t = time.perf_counter()
            pool = _left_out(exp, given.get(name), task)
            if cfg.baseline == "all":
                row, ok, new[name] = _baseline_of(exp, name, pool, fmts[name])
                base_rows.append(row)
                keep = pool.subset(ids=ok)
            else:
                keep = _first_correct(exp, pool, n_rank + n_eval, fmts[name], steps)
            rank, rest = keep.split(n_rank, allow_empty=True)
            evalset = rest.subset(n=n_eval)
            _check_split(exp, name, keep, rank, evalset, n_rank, n_eval, fmts[name], given)
            if cfg.baseline == "all":
                base_rows[-1].update(n_rank=len(rank), n_eval=len(evalset))
            splits[name] = (rank, evalset)
            record.timings[f"{name}/baseline"] = time.perf_counter() - t
            bar.update(len(task))
    return Split(splits, base_rows, new)


def _left_out(exp: Experiment, given, task: Task) -> Task:
    """``task`` without the examples a given ranking was computed on (unless ``allow_overlap``)."""
    if given is None or exp.config.allow_overlap:
        return task
    if not given.example_ids:
        if exp.config.ranking is not None:
            exp.say("note: the ranking does not record its examples; evaluation may overlap them")
        return task
    exp.say(f"left out the {len(given.example_ids)} example(s) the ranking was computed on")
    return task.subset(ids=[e.id for e in task if e.id not in given.example_ids])


def _first_correct(exp: Experiment, pool: Task, n: int, fmt: str, steps: list[str]) -> Task:
    """The first ``n`` examples answered correctly (``filter_correct``), checked in order only
    until there are enough; or the first ``n``."""
    from interp_heads.tasks import take_correct

    cfg = exp.config
    if not cfg.filter_correct:
        return pool.subset(n=n)
    with warnings.catch_warnings():  # none kept: _check_split says so, as the run's error
        warnings.simplefilter("ignore", UserWarning)
        kept = take_correct(
            exp.model,
            pool,
            n,
            fmt=fmt,
            max_new_tokens=cfg.max_new_tokens,
            batch_size=cfg.batch_size,
            batch_padding=cfg.batch_padding,
        )
    doing = "evaluating" if "sweep" in steps else "ranking on"
    exp.say(
        f"{doing} {len(kept)} correctly answered example(s) "
        f"({kept.meta['filter']['n_evaluated']} of {len(pool)} evaluated)"
    )
    return kept


def _check_split(exp, name, keep: Task, rank, evalset, n_rank, n_eval, fmt, given) -> None:
    """A task left without rows to rank or to evaluate is bad input: one line saying why."""
    cfg = exp.config
    if (len(rank) or not n_rank) and (len(evalset) or not n_eval):
        if n_rank:
            _check_attribution_inputs(cfg, name, rank)
        return
    if cfg.baseline == "all":
        raise PipelineError(
            f"task {name!r}: {len(keep)} example(s) left after filtering; need more than "
            f"n_rank={n_rank}"
        )
    if not n_eval:
        raise PipelineError(
            f"task {name!r}: no example answered correctly in format {fmt!r}; "
            "nothing to rank (try --fmt or --no-filter)"
        )
    left_out = bool(given.get(name) and given[name].example_ids) and not cfg.allow_overlap
    raise PipelineError(
        f"task {name!r} has no examples left to evaluate (after --skip {cfg.skip}"
        f"{', leaving out the ranking examples' if left_out else ''}"
        f"{', keeping correct answers' if cfg.filter_correct else ''})"
    )


def _baseline_of(
    exp: Experiment, name: str, task: Task, fmt: str
) -> tuple[dict, list, dict | None]:
    """The baseline row, the correct ids, and a new resume entry to store (None: reused)."""
    cfg = exp.config
    if not cfg.filter_correct:
        return {"task": name, "n_examples": len(task)}, [e.id for e in task], None
    padding = {} if cfg.batch_padding is None else {"batch_padding": cfg.batch_padding}
    key = resume.baseline_key(
        resume.model_fingerprint(exp.model),
        rows_key(exp.model, task, fmt),
        max_new_tokens=cfg.max_new_tokens,
        batch_size=cfg.batch_size,
        decoding="greedy",
        **padding,  # only when set: the keys of runs without it are unchanged
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
        model,
        task,
        fmt=fmt,
        max_new_tokens=cfg.max_new_tokens,
        batch_size=cfg.batch_size,
        batch_padding=cfg.batch_padding,
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
    """The attribution method's rules for this task (what ``auto`` means for it, corrupted prompts)."""
    cfg.method_options(has_corrupted=rank.has_corrupted, task=name)


def rows_key(model, task: Task, fmt: str) -> str:
    """Digest of a task's rows and of the prompts the model sees (part of every resume key)."""
    from interp_heads.tasks.prompts import render

    return resume.rows_digest(task, render(model, [e.prompt for e in task], fmt=fmt))


def _reads_evaluated(cfg) -> bool:
    """Whether the run's attribution method reads the evaluated rows (``Method.reads_evaluated``;
    ``auto`` resolves per task to methods that never do)."""
    if cfg.given_ranking or cfg.method_class() is None:
        return False
    from interp_heads.attribution.methods import METHODS

    return METHODS.build(str(cfg.attribution)).reads_evaluated(cfg.method_options())
