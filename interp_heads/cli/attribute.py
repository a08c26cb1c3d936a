"""``interp-heads attribute``: rank every head on one task."""

from __future__ import annotations

from interp_heads.cli.early import command_config


def cmd_attribute(args) -> int:
    """Rank every head on a task; write attribution.parquet, ranking.csv and a heatmap.

    By default the heads are ranked on the first ``--n-examples`` examples the unmasked model
    answers correctly, in the task's prompt format (declared by the file, else measured), with
    ``--method auto``: ``atp`` when the task has corrupted prompts, else ``ablation_atp``.
    """
    from functools import partial

    from interp_heads.cli.progress import step_progress
    from interp_heads.pipeline.experiment import attribute_steps, run_experiment

    config = command_config(args)
    progress = partial(step_progress, quiet=args.quiet)
    exp, made, _ = run_experiment(
        config,
        args.out,
        args.force,
        True,  # the steps' own bars hidden under the command's, but the known heads' (layers)
        attribute_steps(),
        notes=not args.quiet,
        progress=progress,
        bars=() if args.quiet else ("known",),
    )
    scores = next(iter(made["attribute"].rankings.values()))
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
    print(f"wrote {exp.folder.ranking_csv} and {made['report'].index}")
    return 0
