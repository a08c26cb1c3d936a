"""``interp-heads study``: a registered multi-run study run or resumed, then its pages."""

from __future__ import annotations


def cmd_study(args) -> int:
    """Run or resume every run of a registered study (interp_heads.studies), then write its pages
    from the run folders; --list lists the studies with their sizes and measured times."""
    from interp_heads.studies import STUDIES, run_study

    if args.list or args.name is None:
        for name in sorted(STUDIES.names()):
            print(STUDIES.build(name).describe())
        return 0
    params = {}
    for item in args.param or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            from interp_heads.errors import PipelineError

            raise PipelineError(f"--param {item!r}: expected KEY=VALUE")
        params[key.strip()] = value.strip()
    pages = run_study(
        args.name,
        args.runs,
        size=args.size,
        docs=args.docs,
        threads=args.threads,
        force=args.force,
        quiet=args.quiet,
        params=params,
        shared=args.shared,
        executor=args.executor,
        ray_address=args.ray_address,
        cpus_per_run=args.cpus_per_run,
    )
    for page in pages:
        print(f"wrote {page}")
    return 0
