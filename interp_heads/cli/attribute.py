"""``interp-heads attribute``: rank every head on one task."""

from __future__ import annotations

from interp_heads.cli.common import _first_examples, _load_model, _say, _step_progress
from interp_heads.config import validation
from interp_heads.config.run_config import RunConfig
from interp_heads.errors import PipelineError
from interp_heads.pipeline.loading import load_any_task
from interp_heads.pipeline.steps import Experiment, run_steps
from interp_heads.store.folder import RunFolder


def cmd_attribute(args) -> int:
    """Rank every head on a task; write attribution.parquet, ranking.csv and a heatmap.

    By default the heads are ranked on the first ``--n-examples`` examples the unmasked model
    answers correctly, in the task's prompt format (declared by the file, else measured), with
    ``--method auto``: ``atp`` when the task has corrupted prompts, else ``ablation_atp``.
    """
    from interp_heads.tasks import resolve_format
    from interp_heads.tasks.fmt import describe

    RunFolder(args.out).check_usable(args.force)  # before any work
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
    config = RunConfig(
        model=args.model,
        tasks=[args.task],
        n_rank=args.n_examples,
        attribution=args.method,
        refine=args.refine,
        exact_layers=args.exact_layers,
        rivals=args.rivals,
        lookahead=args.lookahead,
        verify=args.verify,
        known_heads=args.known_heads,
        ablation=args.ablation,
        filter_correct=not args.no_filter,
        fmt=args.fmt,
        max_new_tokens=args.max_new_tokens,
        batch_size=args.batch_size,
        device=args.device,
    )
    fmt, fmt_info = resolve_format(model, task, args.fmt, max_new_tokens=args.max_new_tokens)
    _say(args, describe(fmt, fmt_info))
    task = _first_examples(args, model, task, args.n_examples, fmt, "ranking on")
    if not args.no_filter and len(task) == 0:
        raise PipelineError(
            f"task {args.task!r}: no example answered correctly in format {fmt!r}; "
            "nothing to rank (try --fmt or --no-filter)"
        )
    folder = RunFolder(args.out)
    folder.claim(config.digest(), args.force)  # after every check: a refusal leaves no folder
    exp = Experiment(
        config=config,
        folder=folder,
        model=model,
        tasks={task.name: task},
        fmts={task.name: fmt},
        fmt_infos={task.name: fmt_info},
        quiet=True,  # the step bar below is the progress bar (and the known heads' own)
        force=args.force,
        digest=config.digest(),
        batch_size=args.batch_size,
        splits={task.name: (task, task.subset(n=0))},
        provenance={"filter_correct": not args.no_filter, "fmt_info": fmt_info},
    )
    exp.manifest["command"] = "attribute"
    steps = ["attribute", "known", "attention", "report"]
    with _step_progress(model, steps, args.quiet) as moved:

        def on_step(name: str) -> None:
            moved(name)
            exp.quiet = args.quiet or name != "known"  # the known heads' bar: layers done

        made = run_steps(exp, steps, on_step=on_step)
    scores = made["attribute"][task.name]
    print(f"method: {scores.method}; top heads: {', '.join(scores.top_labels(10))}")
    stab = scores.provenance.get("stability") or {}
    if "jaccard" in stab:
        from interp_heads.attribution.stability import verdict

        agree = stab.get("too_few") or "; ".join(
            f"k={k}: Jaccard {j:.2f}, {verdict(stab, k)}" for k, j in stab["jaccard"].items()
        )
        print(f"split-half stability ({stab['n_examples']} rank examples, Spearman "
              f"{stab['spearman']:.2f}): {agree}")  # fmt: skip
    check = scores.provenance.get("verification")
    if check:
        print(f"verified against exact mean ablation: {check['verdict']}")
    print(f"wrote {folder.ranking_csv} and {made['report']}")
    return 0
