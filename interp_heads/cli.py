"""``interp-heads``: tasks, attribution, ablation sweeps, whole runs and reports from the shell.

Bad input (task file, model, k, head label, empty task, output folder, config, flag value) ends
with one line ``interp-heads: error: ...`` on stderr and exit status 2, before any file is written.
Ctrl-C ends with "interrupted; rerun the same command to resume" and exit status 130. One process
writes a run folder at a time (``interp_heads.runfolder``).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import sys
import warnings
from pathlib import Path

from interp_heads import runfolder, validation
from interp_heads.pipeline import (
    PipelineError,
    RunConfig,
    check_ks,
    load_any_model,
    load_any_task,
    prepare_out_dir,
    versions,
    write_atomic,
)

MAX_MESSAGE = 300  # characters of an error line; longer messages are cut


def _load_model(args):
    """The model of ``--model`` on ``--device`` (library chatter such as "Moving model to device"
    is swallowed with ``--quiet``)."""
    validation.check_device(args.device)
    quiet = (
        contextlib.redirect_stdout(io.StringIO())
        if getattr(args, "quiet", False)
        else contextlib.nullcontext()
    )
    with quiet:
        model = load_any_model(args.model, args.device, n_devices=getattr(args, "n_devices", 1))
    from interp_heads import threads

    threads.watch(model)  # share the cores with interp-heads processes that start later
    return model


# --------------------------------------------------------------------------- tasks
def cmd_tasks(args) -> int:
    """List, show or build the task data sets."""
    if args.action == "list":
        try:
            from interp_heads.tasks import list_tasks

            names = list(list_tasks())
        except ImportError:
            from interp_heads.tasks.schema import BUILTIN_TASKS

            names = list(BUILTIN_TASKS)
        for name in names:
            print(name)
        return 0
    if args.action == "show":
        if not args.name:
            raise PipelineError("tasks show needs a task name or file")
        task = load_any_task(args.name)
        print(
            f"{task.name}: {len(task)} examples, sha256 {task.sha256[:16] or '-'}, source {task.source or '-'}"
        )
        print(f"corrupted prompts: {'yes' if task.has_corrupted else 'no'}")
        for ex in list(task)[: 3 if args.n is None else args.n]:
            print(json.dumps(ex.to_dict(), ensure_ascii=False))
        return 0
    from interp_heads.tasks import builder

    return int(builder.main(args.rest + ([] if args.n is None else ["-n", str(args.n)])) or 0)


# --------------------------------------------------------------------------- attribute
def cmd_attribute(args) -> int:
    """Rank every head on a task; write attribution.parquet, ranking.csv and a heatmap.

    By default the heads are ranked on the first ``--n-examples`` examples the unmasked model
    answers correctly, in the task's prompt format (declared by the file, else measured), with
    ``--method auto``: ``atp`` when the task has corrupted prompts, else ``ablation_atp``.
    """
    from interp_heads.attribution import METHODS, attribute_heads
    from interp_heads.report import build_report
    from interp_heads.tasks import resolve_format
    from interp_heads.tasks.fmt import describe

    if args.method not in METHODS:
        raise PipelineError(f"unknown method {args.method!r}; use one of {', '.join(METHODS)}")
    model = _load_model(args)
    task = load_any_task(args.task)
    # the longest rendering (chat when the model has a template) unless the format is given
    validation.check_prompt_lengths(
        model, task, args.fmt or task.fmt, args.max_new_tokens, corrupted=task.has_corrupted
    )
    if args.refine is not None and args.refine > model.cfg.n_layers * model.cfg.n_heads:
        raise PipelineError(
            f"refine={args.refine} exceeds the number of heads ({model.cfg.n_layers * model.cfg.n_heads})"
        )
    out = Path(args.out)
    params = {
        "command": "attribute",
        "model": args.model,
        "task": args.task,
        "method": args.method,
        "n_examples": args.n_examples,
        "refine": args.refine,
        "ablation": args.ablation,
        "filter_correct": not args.no_filter,
        "fmt": args.fmt,
        "max_new_tokens": args.max_new_tokens,
    }
    prepare_out_dir(out, _digest(params), args.force)
    fmt, fmt_info = resolve_format(model, task, args.fmt, max_new_tokens=args.max_new_tokens)
    _say(args, describe(fmt, fmt_info))
    task = _first_examples(args, model, task, args.n_examples, fmt, "ranking on")
    if not args.no_filter and len(task) == 0:
        raise PipelineError(
            f"task {args.task!r}: no example answered correctly in format {fmt!r}; "
            "nothing to rank (try --fmt or --no-filter)"
        )
    with _forward_counter(model, "attribution", args.quiet):
        scores = attribute_heads(
            model,
            task,
            args.method,
            refine=args.refine,
            batch_size=args.batch_size,
            fmt=fmt,
            ablation=args.ablation,
        )
    scores.provenance.update(filter_correct=not args.no_filter, fmt_info=fmt_info)
    (out / "attribution").mkdir(exist_ok=True)
    scores.save(out / "attribution" / f"{task.name}.json")
    frame = scores.to_frame()
    with runfolder.atomic(out / "attribution.parquet") as tmp:
        frame.to_parquet(tmp, index=False)
    with runfolder.atomic(out / "ranking.csv") as tmp:
        frame.sort_values("rank")[
            ["task", "rank", "label", "layer", "head", "score", "method"]
        ].to_csv(tmp, index=False)
    _manifest(out, params, model, timings={"attribution": scores.provenance.get("seconds")})
    index = build_report(out)
    print(f"method: {scores.method}; top heads: {', '.join(scores.top_labels(10))}")
    print(f"wrote {out / 'ranking.csv'} and {index}")
    return 0


def _first_examples(args, model, task, n, fmt, doing: str):
    """The first ``n`` examples, or (unless ``--no-filter``) the first ``n`` answered correctly."""
    from interp_heads.tasks import take_correct

    if args.no_filter:
        return task.subset(n=n)
    kept = take_correct(
        model, task, n, fmt=fmt, max_new_tokens=args.max_new_tokens, batch_size=args.batch_size
    )
    _say(
        args,
        f"{doing} {len(kept)} correctly answered example(s) "
        f"({kept.meta['filter']['n_evaluated']} of {len(task)} evaluated)",
    )
    return kept


def _say(args, line: str) -> None:
    if not getattr(args, "quiet", False):
        print(line, file=sys.stderr)


@contextlib.contextmanager
def _forward_counter(model, desc: str, quiet: bool):
    """A progress bar counting the model's forward passes (attribution has no known total)."""
    from tqdm.auto import tqdm

    bar = tqdm(desc=desc, unit=" forward", disable=quiet, leave=False)

    def count(*_) -> None:  # a forward hook returning a value would replace the output
        bar.update(1)

    handle = model.embed.register_forward_hook(count)
    try:
        yield bar
    finally:
        handle.remove()
        bar.close()


# --------------------------------------------------------------------------- ablate
def load_ranking(path: str, task: str, n_layers: int, n_heads: int) -> list[tuple[int, int]]:
    """Ordered heads from a run folder, ``ranking.csv`` or ``attribution.parquet``."""
    import pandas as pd

    from interp_heads.heads import parse_heads

    p = Path(path)
    if p.is_dir():
        p = next(
            (p / n for n in ("ranking.csv", "attribution.parquet") if (p / n).exists()),
            p / "ranking.csv",
        )
    if not p.exists():
        raise PipelineError(f"ranking {str(p)!r} not found")
    try:
        frame = (
            pd.read_parquet(p) if p.suffix == ".parquet" else pd.read_csv(p, dtype={"label": str})
        )
    except Exception as exc:  # pandas/pyarrow raise many types for a damaged file
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise PipelineError(
            f"ranking {str(p)!r} is not a readable {p.suffix.lstrip('.') or 'csv'} file ({msg})"
        ) from None
    if "label" not in frame.columns:
        raise PipelineError(f"ranking {str(p)!r} has no 'label' column")
    if "task" in frame.columns and frame["task"].nunique() > 1:
        frame = frame[frame["task"] == task]
        if frame.empty:
            raise PipelineError(f"ranking {str(p)!r} has no rows for task {task!r}")
    if "rank" in frame.columns:
        frame = frame.sort_values("rank")
    labels = list(frame["label"])
    if not labels or any(not isinstance(x, str) for x in labels):
        raise PipelineError(
            f"ranking {str(p)!r} has {'no rows' if not labels else 'rows without a label'} (truncated?)"
        )
    try:
        heads = parse_heads(labels, n_layers, n_heads)
    except ValueError as exc:
        raise PipelineError(f"ranking {str(p)!r}: {exc}") from None
    validation.check_unique_heads(heads, f"ranking {str(p)!r}")
    return heads


def ranking_provenance(path: str, task: str) -> dict:
    """Provenance of a ranking (its examples, prompt format...) when the run folder holds it."""
    from interp_heads.attribution import HeadScores

    p = Path(path)
    root = p if p.is_dir() else p.parent
    for cand in (root / "attribution" / f"{task}.json", root / "attribution.parquet"):
        if cand.exists():
            try:
                scores = HeadScores.load(cand)
            except (OSError, ValueError, KeyError):
                continue
            if scores.task == task:
                return dict(scores.provenance)
    return {}


def cmd_ablate(args) -> int:
    """Mask TopK vs random heads while generating; write the sweep tables, figures and report.

    By default the evaluated examples are those the unmasked model answers correctly, and the
    examples the ranking was computed on (recorded by ``attribute``) are left out; the prompt
    format is the ranking's, so heads are ranked and masked on the same prompts.
    """
    from interp_heads.executor import open_executor
    from interp_heads.heads import parse_heads
    from interp_heads.metrics import resolve_metrics
    from interp_heads.pipeline import SELECTIONS
    from interp_heads.report import build_report, write_sweep_outputs
    from interp_heads.sweep import SweepConfig, run_sweep
    from interp_heads.tasks import resolve_format
    from interp_heads.tasks.fmt import describe

    _check_names(args.selections, SELECTIONS + ("layermatchedrandomk",), "selection")
    if not (args.heads or args.ranking):
        raise PipelineError("give --ranking DIR_OR_CSV or --heads L0H1,...")
    ablation = args.ablation or args.method or "mean"
    if args.method:
        print("interp-heads: note: ablate --method is deprecated; use --ablation", file=sys.stderr)
    model = _load_model(args)
    n_layers, n_heads = model.cfg.n_layers, model.cfg.n_heads
    task = load_any_task(args.task)
    prov = {}
    if args.heads:
        ranking = parse_heads(args.heads, n_layers, n_heads)
        validation.check_unique_heads(ranking, "--heads")
        ks = args.k or [len(ranking)]
        validation.check_ks_fit(ks, len(ranking), "--heads")
    else:
        ranking = load_ranking(args.ranking, task.name, n_layers, n_heads)
        ks = args.k or [16, 32, 64, 128]
        check_ks(ks, n_layers * n_heads)
        validation.check_ks_fit(ks, len(ranking), f"ranking {args.ranking!r}")
        prov = ranking_provenance(args.ranking, task.name)
    check_ks(ks, n_layers * n_heads)
    fmt_req = args.fmt or (prov.get("fmt") if prov.get("fmt") in ("chat", "plain") else None)
    # before resolve_format generates: the longest rendering (chat when the model has a template) unless given
    validation.check_prompt_lengths(
        model, task.split(args.skip)[1], fmt_req or task.fmt, args.max_new_tokens
    )
    fmt, fmt_info = resolve_format(model, task, fmt_req, max_new_tokens=args.max_new_tokens)
    if fmt_req and not args.fmt:
        fmt_info = {"source": "ranking"}
    _say(args, describe(fmt, fmt_info))
    pool = task.split(args.skip)[1]
    rank_ids = set(prov.get("example_ids") or [])
    if rank_ids and not args.allow_overlap:
        pool = pool.subset(ids=[e.id for e in pool if e.id not in rank_ids])
        _say(args, f"left out the {len(rank_ids)} example(s) the ranking was computed on")
    elif args.ranking and not rank_ids and not args.allow_overlap:
        _say(args, "note: the ranking does not record its examples; evaluation may overlap them")
    task = _first_examples(args, model, pool, args.n_eval, fmt, "evaluating")
    if len(task) == 0:
        raise PipelineError(
            f"task {args.task!r} has no examples left to evaluate (after --skip {args.skip}"
            f"{', leaving out the ranking examples' if rank_ids and not args.allow_overlap else ''}"
            f"{'' if args.no_filter else ', keeping correct answers'})"
        )
    cfg = SweepConfig(
        ks=ks,
        selections=args.selections,
        seeds=args.seeds,
        method=ablation,
        max_new_tokens=args.max_new_tokens,
        metrics=args.metrics,
        fmt=fmt,
    )
    out = Path(args.out)
    params = {
        "command": "ablate",
        "model": args.model,
        "task": args.task,
        "skip": args.skip,
        "n_eval": args.n_eval,
        "heads": [list(h) for h in ranking],
        "sweep": cfg.__dict__,
        "eval_ids": [e.id for e in task],
        "filter_correct": not args.no_filter,
        "fmt_info": fmt_info,
    }
    metrics = resolve_metrics(args.metrics, args.comet_model)
    prepare_out_dir(out, _digest(params), args.force)
    _manifest(out, params, model, status="running")
    with open_executor(args, model) as executor:  # None: this process
        result = run_sweep(
            model,
            {task.name: task},
            {task.name: ranking},
            cfg,
            metrics,
            batch_size=args.batch_size,
            out_dir=out,
            force=args.force,
            progress=not args.quiet,
            executor=executor,
        )
    write_sweep_outputs(out, result, {task.name: task})
    _manifest(
        out, params, model, timings=result.timings, metric_cache=getattr(result, "metric_cache", {})
    )
    index = build_report(out)
    summary = result.summary()
    print(
        summary[["task", "selection", "k", "metric", "mean", "ci_low", "ci_high"]].to_string(
            index=False
        )
    )
    print(f"wrote {index}")
    return 0


# --------------------------------------------------------------------------- run, report
def cmd_run(args) -> int:
    """Run the whole pipeline from a TOML config (resumes an interrupted run)."""
    from interp_heads.pipeline import run_pipeline

    config = RunConfig.from_toml(args.config)
    if args.threads is not None:
        config.threads = args.threads  # the flag wins over the config
    for key in ("executor", "ray_address", "n_workers", "n_devices"):  # so do these
        if getattr(args, key) is not None:
            setattr(config, key, getattr(args, key))
    config.validate()
    chatter = contextlib.redirect_stdout(io.StringIO()) if args.quiet else contextlib.nullcontext()
    with chatter:  # --quiet: no "Moving model to device" from TransformerLens
        index = run_pipeline(config, args.out, force=args.force, quiet=args.quiet)
    print(f"wrote {index}")
    return 0


def cmd_report(args) -> int:
    """Rebuild figures and index.html of a run folder from its saved results (no model)."""
    from interp_heads.report import build_report

    run_dir = Path(args.dir)
    if not run_dir.is_dir() or not any(
        (run_dir / n).exists() for n in ("manifest.json", "summary.parquet", "attribution.parquet")
    ):
        raise PipelineError(
            f"{str(run_dir)!r} is not a run folder (no manifest.json, summary or attribution)"
        )
    try:
        runfolder.acquire(run_dir)
    except runfolder.RunFolderBusy as exc:
        raise PipelineError(str(exc)) from None
    print(f"wrote {build_report(run_dir)}")
    return 0


def _check_names(names: list[str], known: tuple[str, ...], what: str) -> None:
    for name in names:
        if name.lower().replace("_", "").replace("-", "") not in known:
            raise PipelineError(
                f"unknown {what} {name!r}; use {', '.join(k for k in known if 'randomk' not in k or k == 'randomk')}"
            )


def _digest(params: dict) -> str:
    return hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _manifest(
    out: Path, params: dict, model, status: str = "complete", timings: dict | None = None, **extra
) -> None:
    from interp_heads.pipeline import git_hash

    manifest = {
        "config": params,
        "config_digest": _digest(params),
        "status": status,
        "versions": versions(),
        "git": git_hash(),
        "ks": params.get("sweep", {}).get("ks"),
        "model": {
            **dict(getattr(model, "interp_heads_source", {}) or {}),
            "n_layers": model.cfg.n_layers,
            "n_heads": model.cfg.n_heads,
        },
        "timings": timings or {},
        **extra,
    }
    write_atomic(out / "manifest.json", json.dumps(manifest, indent=1, default=str))


# --------------------------------------------------------------------------- parser
class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (``interp-heads: error: ...``, exit 2) and defaults in help."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", argparse.ArgumentDefaultsHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message):
        self.exit(2, f"interp-heads: error: {_cut(message)} (see {self.prog} --help)\n")


def _version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("interp_heads")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    pos, nonneg = validation.positive_int, validation.non_negative_int
    p = _Parser(prog="interp-heads", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"interp-heads {_version()}")
    sub = p.add_subparsers(dest="command", required=True)

    t = sub.add_parser(
        "tasks",
        help=cmd_tasks.__doc__,
        description=cmd_tasks.__doc__,
        epilog="tasks build passes any further arguments to python -m interp_heads.tasks.builder",
    )
    t.add_argument("action", choices=["list", "show", "build"])
    t.add_argument("name", nargs="?", help="task name or JSONL file (show)")
    t.add_argument(
        "-n",
        type=pos,
        default=None,
        help="examples to print (show: 3 when unset) or build (per task)",
    )
    t.set_defaults(func=cmd_tasks)

    def common(sp, out_help):
        sp.add_argument(
            "--model",
            default="smollm2-135m",
            help="model spec (smollm2-135m: the embedded SmolLM2)",
        )
        sp.add_argument("--task", required=True, help="built-in task name or task JSONL file")
        sp.add_argument("--out", required=True, help=out_help)
        sp.add_argument("--batch-size", type=pos, default=16, help="examples per forward pass")
        sp.add_argument(
            "--device", default=None, help="cpu, cuda, cuda:N, mps (None: CUDA when present)"
        )
        sp.add_argument(
            "--threads",
            type=pos,
            default=None,
            help="torch CPU threads (None: cores shared among running interp-heads processes)",
        )
        sp.add_argument("--force", action="store_true", help="reuse a folder holding other results")
        sp.add_argument("--quiet", action="store_true", help="no progress bars")
        sp.add_argument(
            "--n-devices", type=pos, default=1, help="GPUs the model's layers are split over"
        )

    a = sub.add_parser("attribute", help=cmd_attribute.__doc__, description=cmd_attribute.__doc__)
    common(a, "output folder")
    a.add_argument(
        "--method",
        default="auto",
        help="auto (atp with corrupted prompts, else ablation_atp), exact, atp, ablation_atp, gradxact, "
        "headmask or mean_ablation",
    )
    a.add_argument(
        "--ablation",
        default="mean",
        choices=["mean", "zero", "resample"],
        help="the ablation kind ablation_atp estimates (use the one you will mask with)",
    )
    a.add_argument(
        "--n-examples", type=pos, default=24, help="rank on the first N correctly answered examples"
    )
    a.add_argument(
        "--no-filter",
        action="store_true",
        help="rank on the first N examples, answered correctly or not",
    )
    a.add_argument(
        "--fmt",
        default=None,
        choices=["chat", "plain", "auto"],
        help="prompt format (None: the task file's, else the better of chat/plain, measured)",
    )
    a.add_argument(
        "--max-new-tokens", type=pos, default=16, help="answer length when checking correctness"
    )
    a.add_argument("--refine", type=pos, default=None, help="re-score the top N heads exactly")
    a.set_defaults(func=cmd_attribute)

    b = sub.add_parser("ablate", help=cmd_ablate.__doc__, description=cmd_ablate.__doc__)
    common(b, "output folder (resumable)")
    b.add_argument("--ranking", help="run folder, ranking.csv or attribution.parquet")
    b.add_argument("--heads", help="explicit heads to mask, e.g. L3H2,L5H0 (instead of --ranking)")
    b.add_argument(
        "--k",
        type=validation.ks_arg,
        default=None,
        help="numbers of masked heads, e.g. 16,32,64,128 (None: 16,32,64,128; with --heads their number)",
    )
    b.add_argument("--seeds", type=pos, default=5, help="random draws per random selection and k")
    b.add_argument(
        "--selections",
        type=validation.names_arg,
        default=["topk", "randomk"],
        help="topk,randomk,layermatched",
    )
    b.add_argument(
        "--metrics",
        type=validation.names_arg,
        default=["accuracy", "comet"],
        help="accuracy,comet,chrf,minilm_cosine",
    )
    b.add_argument("--comet-model", default=None, help="COMET checkpoint name or path")
    b.add_argument(
        "--ablation",
        default=None,
        choices=["mean", "zero", "resample"],
        help="ablation kind (None: mean)",
    )
    b.add_argument(
        "--method",
        default=None,
        choices=["mean", "zero", "resample"],
        help="deprecated alias of --ablation (kept for one release)",
    )
    b.add_argument(
        "--n-eval", type=pos, default=100, help="evaluate at most N (correctly answered) examples"
    )
    b.add_argument(
        "--skip", type=nonneg, default=0, help="skip the first N examples of the task file"
    )
    b.add_argument(
        "--no-filter",
        action="store_true",
        help="evaluate examples whether or not the unmasked model gets them right",
    )
    b.add_argument(
        "--allow-overlap",
        action="store_true",
        help="also evaluate the examples the ranking was computed on (left out by default)",
    )
    b.add_argument(
        "--fmt",
        default=None,
        choices=["chat", "plain", "auto"],
        help="prompt format (None: the ranking's, else the task file's, else measured)",
    )
    b.add_argument("--max-new-tokens", type=pos, default=16, help="tokens generated per answer")
    placement_flags(b)
    b.set_defaults(func=cmd_ablate)

    r = sub.add_parser("run", help=cmd_run.__doc__, description=cmd_run.__doc__)
    r.add_argument("--config", required=True, help="TOML config, e.g. configs/seed_figure.toml")
    r.add_argument("--out", required=True, help="run folder (rerun the same command to resume)")
    r.add_argument(
        "--threads",
        type=pos,
        default=None,
        help="torch CPU threads (None: the config's, else cores shared among interp-heads processes)",
    )
    r.add_argument("--force", action="store_true", help="reuse a folder holding a different config")
    r.add_argument("--quiet", action="store_true", help="no progress bars")
    r.add_argument(
        "--n-devices", type=pos, default=None, help="GPUs the model's layers are split over"
    )
    placement_flags(r, default=None)
    r.set_defaults(func=cmd_run)

    rp = sub.add_parser("report", help=cmd_report.__doc__, description=cmd_report.__doc__)
    rp.add_argument("dir", help="run folder")
    rp.set_defaults(func=cmd_report)
    return p


def placement_flags(sp, default: str | None = "local") -> None:
    """``--executor``, ``--ray-address``, ``--n-workers`` (where the sweep runs; docs/scale.md)."""
    sp.add_argument(
        "--executor",
        choices=["local", "ray"],
        default=default,
        help="where the sweep's generations run: this process or Ray actors (docs/scale.md)",
    )
    sp.add_argument(
        "--ray-address",
        default=None,
        help="Ray cluster to join (default: $RAY_ADDRESS, else a local Ray instance)",
    )
    sp.add_argument(
        "--n-workers",
        type=validation.positive_int,
        default=None,
        help="Ray actors (default: one per GPU, else CPU)",
    )


def _cut(msg: str, limit: int = MAX_MESSAGE) -> str:
    """First line of ``msg``, at most ``limit`` characters."""
    line = msg.strip().splitlines()[0] if msg.strip() else ""
    return line if len(line) <= limit else line[: limit - 15] + f" ... [{len(line)} chars]"


def _one_line_warning(message, category, filename, lineno, line=None) -> str:
    return f"interp-heads: warning: {_cut(str(message), 2 * MAX_MESSAGE)}\n"


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status (2 for bad input, 130 when interrupted)."""
    from interp_heads.metrics import MetricUnavailable
    from interp_heads.models import ModelLoadError

    parser = build_parser()
    try:
        args, rest = parser.parse_known_args(argv)
        if rest and not (args.command == "tasks" and args.action == "build"):
            parser.error(f"unrecognized arguments: {' '.join(rest)}")
        args.rest = rest
    except SystemExit as exc:
        return int(exc.code or 0)
    errors: tuple[type[BaseException], ...] = (
        ValueError,
        ModelLoadError,
        MetricUnavailable,
        OSError,
        KeyError,
    )
    try:
        from interp_heads.tasks import TaskFormatError

        errors += (TaskFormatError,)
    except ImportError:
        pass
    formatwarning, warnings.formatwarning = warnings.formatwarning, _one_line_warning
    try:
        with runfolder.held_locks():
            if args.command in ("attribute", "ablate", "run"):
                from interp_heads import threads

                threads.configure(args.threads)
            return args.func(args)
    except KeyboardInterrupt:
        print("\ninterp-heads: interrupted; rerun the same command to resume", file=sys.stderr)
        return 130
    except errors as exc:
        msg = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
        print(f"interp-heads: error: {_cut(msg) or type(exc).__name__}", file=sys.stderr)
        return 2
    except Exception as exc:  # a bug, not bad input: one line, the traceback on request
        if os.environ.get("INTERP_HEADS_DEBUG"):
            raise
        print(
            f"interp-heads: internal error: {type(exc).__name__}: {_cut(str(exc))} "
            "(INTERP_HEADS_DEBUG=1 shows the traceback)",
            file=sys.stderr,
        )
        return 1
    finally:
        warnings.formatwarning = formatwarning


if __name__ == "__main__":
    sys.exit(main())
