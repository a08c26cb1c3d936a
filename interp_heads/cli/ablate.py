"""``interp-heads ablate``: mask TopK and random heads of a ranking on one task."""

from __future__ import annotations

from pathlib import Path

from interp_heads.cli.common import _digest, _first_examples, _load_model, _parse, _say
from interp_heads.config import validation
from interp_heads.config.run_config import check_ks
from interp_heads.errors import PipelineError
from interp_heads.execution.registry import open_executor
from interp_heads.pipeline.loading import load_any_task
from interp_heads.pipeline.rankings import (
    check_heads_or_ranking,
    check_ranking_source,
    load_ranking,
    ranking_elbow,
    stored_scores,
)
from interp_heads.pipeline.steps import Experiment, run_steps
from interp_heads.store.folder import RunFolder
from interp_heads.vocab import Selection


def cmd_ablate(args) -> int:
    """Mask TopK vs random heads while generating; write the sweep tables, figures and report.

    By default the evaluated examples are those the unmasked model answers correctly, and the
    examples the ranking was computed on (recorded by ``attribute``) are left out; the prompt
    format is the ranking's, so heads are ranked and masked on the same prompts.
    """
    from interp_heads.metrics import resolve_metrics

    _check_args(args)
    RunFolder(args.out).check_usable(args.force)  # before any work
    model = _load_model(args)
    task = load_any_task(args.task)
    ranking, ks, prov, ranked_on = _ranking(args, model, task)
    fmt_req = args.fmt or (prov.get("fmt") if prov.get("fmt") in ("chat", "plain") else None)
    # before resolve_format generates: the longest rendering (chat when the model has a template)
    pool = task.split(args.skip)[1]
    validation.check_prompt_lengths(model, pool, fmt_req or task.fmt, args.max_new_tokens)
    metrics = resolve_metrics(args.metrics, args.comet_model)  # before any generation
    task, fmt, fmt_info = _evaluated(args, model, task, pool, prov, fmt_req)
    cfg = _sweep_config(args, ks, fmt)
    params = {
        "command": "ablate",
        "model": args.model,
        "task": args.task,
        "skip": args.skip,
        "n_eval": args.n_eval,
        "heads": [list(h) for h in ranking],
        "sweep": cfg.to_dict(),
        "eval_ids": [e.id for e in task],
        "filter_correct": not args.no_filter,
        "fmt_info": fmt_info,
    }
    folder = RunFolder(args.out)
    folder.claim(_digest(params), args.force)
    exp = Experiment(
        config=params,
        folder=folder,
        model=model,
        tasks={task.name: task},
        metrics=metrics,
        ks=ks,
        quiet=args.quiet,
        force=args.force,
        digest=_digest(params),
        batch_size=args.batch_size,
        sweep_config=cfg,
        splits={task.name: (task.subset(n=0), task)},
        rankings={task.name: ranking},
    )
    exp.manifest.update(command="ablate", seeds={"random_draws": args.seeds})
    if "elbow_k" in prov:
        exp.manifest["elbow_k"] = {task.name: prov["elbow_k"]}
    if args.ranking:
        exp.manifest["ranking"] = {
            "source": str(args.ranking),
            "path": str(Path(args.ranking).resolve()),
            "task": ranked_on,
            "info": {k: prov[k] for k in ("method", "fmt") if k in prov},
        }
    with open_executor(args, model) as executor:
        exp.sweep_options["executor"] = executor
        made = run_steps(exp, ["sweep", "tables", "report"])
    cols = ["task", "selection", "k", "metric", "mean", "ci_low", "ci_high"]
    print(made["sweep"].summary()[cols].to_string(index=False))
    print(f"wrote {made['report']}")
    return 0


def _check_args(args) -> None:
    for name in args.selections:
        _parse(Selection, name)
    if args.heads is not None and not args.heads.strip(" ,"):
        raise PipelineError("--heads is empty; give head labels such as L3H2,L5H0")
    check_heads_or_ranking(args.heads, args.ranking)
    if not (args.heads or args.ranking):
        raise PipelineError("give --ranking DIR_OR_CSV or --heads L0H1,...")
    if args.elbow and args.heads:
        raise PipelineError("--elbow needs a ranking with scores (--ranking), not --heads")


def _ranking(args, model, task):
    """``(heads in order, ks, the ranking's provenance, the task it was made on)``."""
    from interp_heads.heads import parse_heads

    n_layers, n_heads = model.cfg.n_layers, model.cfg.n_heads
    if args.heads:
        ranking = parse_heads(args.heads, n_layers, n_heads)
        validation.check_unique_heads(ranking, "--heads")
        ks = args.k or [len(ranking)]
        source, prov, ranked_on = "--heads", {}, task.name
    else:
        ranked_on = args.ranking_task or task.name
        ranking = load_ranking(args.ranking, ranked_on, n_layers, n_heads)
        check_ranking_source(args.ranking, ranked_on, model, task, args.allow_other_model, args.allow_other_task)  # fmt: skip
        ks = args.k or [16, 32, 64, 128]
        source = f"ranking {args.ranking!r}"
        scores = stored_scores(args.ranking, ranked_on)  # read once: provenance and elbow
        prov = {} if scores is None else dict(scores.provenance)
        if args.elbow:  # beside the listed k, as the run config's elbow = true
            elbow = ranking_elbow(args.ranking, ranked_on, scores, ranking)
            _say(args, f"elbow of the ranking's sorted importances: k = {elbow}")
            prov = {**prov, "elbow_k": elbow}
            ks = sorted(set(ks) | {elbow})
    check_ks(ks, n_layers * n_heads)
    validation.check_ks_fit(ks, len(ranking), source)
    return ranking, ks, prov, ranked_on


def _evaluated(args, model, task, pool, prov, fmt_req):
    """The evaluated examples (from ``pool``), their prompt format and its record."""
    from interp_heads.tasks import resolve_format
    from interp_heads.tasks.fmt import describe

    fmt, fmt_info = resolve_format(model, task, fmt_req, max_new_tokens=args.max_new_tokens)
    if fmt_req and not args.fmt:
        fmt_info = {"source": "ranking"}
    _say(args, describe(fmt, fmt_info))
    rank_ids = set(prov.get("example_ids") or [])
    left_out = bool(rank_ids) and not args.allow_overlap
    if left_out:
        pool = pool.subset(ids=[e.id for e in pool if e.id not in rank_ids])
        _say(args, f"left out the {len(rank_ids)} example(s) the ranking was computed on")
    elif args.ranking and not rank_ids and not args.allow_overlap:
        _say(args, "note: the ranking does not record its examples; evaluation may overlap them")
    evaluated = _first_examples(args, model, pool, args.n_eval, fmt, "evaluating")
    if len(evaluated) == 0:
        raise PipelineError(
            f"task {args.task!r} has no examples left to evaluate (after --skip {args.skip}"
            f"{', leaving out the ranking examples' if left_out else ''}"
            f"{'' if args.no_filter else ', keeping correct answers'})"
        )
    return evaluated, fmt, fmt_info


def _sweep_config(args, ks, fmt):
    from interp_heads.sweep.config import SweepConfig

    return SweepConfig(
        ks=ks,
        selections=args.selections,
        seeds=args.seeds,
        exclude_top=args.exclude_top,
        ablation=args.ablation or "mean",
        positions=args.positions,
        scale=args.scale_factor,
        max_new_tokens=args.max_new_tokens,
        metrics=args.metrics,
        fmt=fmt,
        reference=args.reference,
        free_form=args.free_form,
    )
