"""``interp-heads attribute``: rank every head on one task."""

from __future__ import annotations

from interp_heads.cli.args import config_from_args


def cmd_attribute(args) -> int:
    """Rank every head on a task; write attribution.parquet, ranking.csv and a heatmap.

    By default the heads are ranked on the first ``--n-examples`` examples the unmasked model
    answers correctly, in the task's prompt format (declared by the file, else measured), with
    ``--method auto``: ``atp`` when the task has corrupted prompts, else ``ablation_atp``.
    """
    from interp_heads.pipeline.experiment import ATTRIBUTE, run_experiment

    config = config_from_args(args, tasks=[args.task], baseline="needed")
    exp, made = run_experiment(
        config, args.out, force=args.force, quiet=args.quiet, steps=ATTRIBUTE
    )
    scores = next(iter(made["attribute"].values()))
    print(f"method: {scores.method}; top heads: {', '.join(scores.top_labels(10))}")
    stab = scores.provenance.get("stability") or {}
    if "jaccard" in stab:
        agree = ", ".join(f"k={k} {j:.2f}" for k, j in stab["jaccard"].items())
        print(f"split-half stability ({stab['n_examples']} rank examples): TopK Jaccard {agree}; "
              f"Spearman {stab['spearman']:.2f}" + ("; UNSTABLE" if stab["unstable"] else ""))  # fmt: skip
    check = scores.provenance.get("verification")
    if check:
        print(f"verified against exact mean ablation: {check['verdict']}")
    print(f"wrote {exp.folder.ranking_csv} and {made['report']}")
    return 0
