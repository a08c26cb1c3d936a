"""The checks a command's inputs get before torch and TransformerLens are imported.

Importing torch and TransformerLens costs seconds of CPU; a typo in a task path, a task file's
columns, a model name or a config key is told in a fraction of one: ``interp_heads.cli`` calls
:func:`check_early` right after parsing. The checks are the pipeline's own
(``pipeline.inputs.check_inputs``, ``RunConfig``), so the line is the one the run would say; the
run checks again (a file may change in between). Warnings are left to the run (said once).
"""

from __future__ import annotations

import warnings


def check_early(args) -> None:
    """Refuse bad input of ``attribute``, ``ablate`` and ``run`` (``PipelineError``, one line)
    without importing torch, TransformerLens or pandas; other commands check their own."""
    if args.command not in ("attribute", "ablate", "run"):
        return
    from interp_heads.pipeline.inputs import check_inputs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the run says them, once
        check_inputs(command_config(args), args.out, args.force)


def command_config(args):
    """The ``RunConfig`` a parsed ``attribute``, ``ablate`` or ``run`` command runs: ``run``'s
    TOML with the flags that override it, else the flags (``cli.args.config_from_args``)."""
    from interp_heads.cli.args import config_from_args
    from interp_heads.config.options import placement_keys
    from interp_heads.config.run_config import RunConfig

    if args.command in ("attribute", "ablate"):
        return config_from_args(args, tasks=[args.task], baseline="needed")
    config = RunConfig.from_toml(args.config)
    flags = {"threads": args.threads} | {key: getattr(args, key) for key in placement_keys()}
    given = {k: v for k, v in flags.items() if v is not None}  # the flags win over the config
    return config.changed(given) if given else config
