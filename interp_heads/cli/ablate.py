"""``interp-heads ablate``: mask TopK and random heads of a given ranking on one task."""

from __future__ import annotations

import sys
import warnings

from interp_heads.cli.early import command_config


def cmd_ablate(args) -> int:
    """Mask TopK vs random heads of a ranking while generating; write the sweep tables, figures
    and report.

    By default the evaluated examples are those the unmasked model answers correctly, and the
    examples the ranking was computed on (recorded by ``attribute``) are left out; the prompt
    format is the ranking's, so heads are ranked and masked on the same prompts.
    """
    from interp_heads.pipeline.experiment import run_experiment
    from interp_heads.sweep.checks import VerdictWarning, check_verdict_counts

    config = command_config(args)
    said = check_verdict_counts(  # at the start, not after the model load and the baseline
        config.selections, config.seeds, {args.task: config.n_eval}, "raise --seeds or --n-eval"
    )
    with warnings.catch_warnings():
        if said:  # the sweep would say it again
            warnings.simplefilter("ignore", VerdictWarning)
        _, made, record = run_experiment(
            config, args.out, force=args.force, quiet=args.quiet, notes=not args.quiet
        )
    if record.manifest.elbow_k and not args.quiet:
        k = next(iter(record.manifest.elbow_k.values()))
        print(f"elbow of the ranking's sorted importances: k = {k}", file=sys.stderr)
    cols = [
        "task",
        "selection",
        "k",
        "metric",
        "mean",
        "ci_low",
        "ci_high",
        "n_examples",
        "n_draws",
    ]
    print(made["sweep"].sweep_result.summary()[cols].to_string(index=False))
    print(f"wrote {made['report'].index}")
    return 0
