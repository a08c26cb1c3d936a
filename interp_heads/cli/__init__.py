"""``interp-heads``: tasks, attribution, ablation sweeps, whole runs and reports from the shell.

Bad input (task file, model, k, head label, empty task, output folder, config, flag value) ends
with one line ``interp-heads: error: ...`` on stderr and exit status 2, before any file is written.
A failing machine (disk full, permissions) ends with one ``error:`` line naming the file and exit
status 1; a bug with one ``internal error:`` line and exit status 1. ``INTERP_HEADS_DEBUG=1``
shows the traceback of anything but bad input. Ctrl-C, SIGTERM and SIGHUP end with "interrupted;
rerun the same command to resume" (exit 130, 143, 129) and release the run folder's lock. One
process writes a run folder at a time (``interp_heads.runfolder``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import warnings

__all__ = ["PipelineError", "build_parser", "load_ranking", "main", "ranking_provenance"]

# Nothing heavy is imported at module level: ``main`` catches Ctrl-C first, then these load.
_LAZY = {
    "PipelineError": "interp_heads.errors",
    "load_ranking": "interp_heads.cli.ablate",
    "ranking_provenance": "interp_heads.cli.ablate",
    "cmd_ablate": "interp_heads.cli.ablate",
    "cmd_attribute": "interp_heads.cli.attribute",
    "cmd_report": "interp_heads.cli.other",
    "cmd_run": "interp_heads.cli.other",
    "cmd_tasks": "interp_heads.cli.other",
    "cmd_score": "interp_heads.cli.score",
}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'interp_heads.cli' has no attribute {name!r}")


MAX_MESSAGE = 300  # characters of an error line; longer messages are cut


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
    from interp_heads import validation
    from interp_heads.config_flags import cli_flag

    me = sys.modules[__name__]  # through the module, so a test's replacement is seen
    cmd_ablate, cmd_attribute, cmd_report, cmd_run, cmd_tasks, cmd_score = (
        getattr(me, n)
        for n in ("cmd_ablate", "cmd_attribute", "cmd_report", "cmd_run", "cmd_tasks", "cmd_score")
    )
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
        cli_flag(sp, "model")
        sp.add_argument("--task", required=True, help="built-in task name or task JSONL file")
        sp.add_argument("--out", required=True, type=validation.out_arg, help=out_help)
        for name in ("batch_size", "device", "threads", "n_devices", "backend"):
            cli_flag(sp, name)
        sp.add_argument("--force", action="store_true", help="reuse a folder holding other results")
        sp.add_argument("--quiet", action="store_true", help="no progress bars")

    a = sub.add_parser("attribute", help=cmd_attribute.__doc__, description=cmd_attribute.__doc__)
    common(a, "output folder")
    cli_flag(a, "attribution", "--method")
    cli_flag(a, "ablation", help="the ablation kind ablation_atp estimates (the one you mask with)")
    cli_flag(a, "n_rank", "--n-examples")
    a.add_argument(
        "--no-filter",
        action="store_true",
        help="rank on the first N examples, answered correctly or not",
    )
    cli_flag(a, "fmt")
    cli_flag(a, "max_new_tokens", help="answer length when checking correctness")
    cli_flag(a, "refine")
    cli_flag(a, "exact_layers")
    cli_flag(a, "rivals")
    cli_flag(a, "verify")
    a.set_defaults(func=cmd_attribute)

    b = sub.add_parser("ablate", help=cmd_ablate.__doc__, description=cmd_ablate.__doc__)
    common(b, "output folder (resumable)")
    b.add_argument("--ranking", help="run folder, ranking.csv or attribution.parquet")
    b.add_argument(
        "--ranking-task",
        help="use the ranking made on this task (None: the --task's own; another task's on purpose)",
    )
    b.add_argument("--heads", help="explicit heads to mask, e.g. L3H2,L5H0 (instead of --ranking)")
    b.add_argument(
        "--k",
        type=validation.ks_arg,
        default=None,
        help="numbers of masked heads, e.g. 16,32,64,128 (None: 16,32,64,128; with --heads their number)",
    )
    cli_flag(b, "seeds")
    cli_flag(b, "exclude_top", action="store_true")
    cli_flag(b, "selections", type=validation.names_arg, default=["topk", "randomk"], choices=None)
    cli_flag(b, "metrics", type=validation.names_arg, choices=None)
    cli_flag(b, "comet_model")
    cli_flag(b, "ablation", default=None)
    cli_flag(b, "ablation", "--method", dest="method", default=None, help="deprecated: --ablation")
    cli_flag(b, "positions")
    cli_flag(b, "scale_factor", type=float)
    cli_flag(b, "n_eval")
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
    cli_flag(
        b, "fmt", help="prompt format (None: the ranking's, else the task file's, else measured)"
    )
    cli_flag(b, "max_new_tokens")
    for name in ("executor", "ray_address", "n_workers"):
        cli_flag(b, name)
    b.set_defaults(func=cmd_ablate)

    r = sub.add_parser("run", help=cmd_run.__doc__, description=cmd_run.__doc__)
    r.add_argument("--config", required=True, help="TOML config, e.g. configs/seed_figure.toml")
    r.add_argument(
        "--out",
        required=True,
        type=validation.out_arg,
        help="run folder (rerun the same command to resume)",
    )
    cli_flag(r, "threads", help="torch CPU threads (None: the config's, else cores shared)")
    for name in ("executor", "ray_address", "n_workers", "n_devices"):  # override the config's
        cli_flag(r, name, default=None)
    r.add_argument("--force", action="store_true", help="reuse a folder holding a different config")
    r.add_argument("--quiet", action="store_true", help="no progress bars")
    r.set_defaults(func=cmd_run)

    rp = sub.add_parser("report", help=cmd_report.__doc__, description=cmd_report.__doc__)
    rp.add_argument("dir", help="run folder")
    rp.set_defaults(func=cmd_report)

    sc = sub.add_parser("score", help=cmd_score.__doc__, description=cmd_score.__doc__)
    sc.add_argument("dir", help="run folder")
    sc.add_argument("--metrics", required=True, help="comma-separated answer metrics, e.g. comet")
    cli_flag(sc, "comet_model")
    sc.set_defaults(func=cmd_score)
    return p


def _cut(msg: str, limit: int = MAX_MESSAGE) -> str:
    """First line of ``msg``, at most ``limit`` characters."""
    line = msg.strip().splitlines()[0] if msg.strip() else ""
    return line if len(line) <= limit else line[: limit - 15] + f" ... [{len(line)} chars]"


def _one_line_warning(message, category, filename, lineno, line=None) -> str:
    return f"interp-heads: warning: {_cut(str(message), 2 * MAX_MESSAGE)}\n"


class _Signalled(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread so every lock is released on the way out."""


def _on_signal(signum, _frame) -> None:
    raise _Signalled(signum)


def _bad_input() -> tuple[type[BaseException], ...]:
    """The exceptions that mean bad input (exit 2); anything else is the machine or a bug."""
    from interp_heads.errors import PipelineError
    from interp_heads.metrics import MetricUnavailable
    from interp_heads.models import ModelLoadError
    from interp_heads.runfolder import RunFolderBusy as busy
    from interp_heads.tasks import TaskFormatError

    return (
        PipelineError,
        ModelLoadError,
        MetricUnavailable,
        TaskFormatError,
        FileExistsError,
        busy,
    )


def _removes_unused(command: str):
    """A folder a writing command created and left with nothing in it goes when it fails."""
    if command not in ("attribute", "ablate", "run"):
        import contextlib

        return contextlib.nullcontext()
    from interp_heads import lifecycle

    return lifecycle.removed_if_unused()


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status (2 bad input, 1 failure, 130/143/129 interrupted)."""
    try:
        return _main(argv)
    except KeyboardInterrupt as exc:  # also during start-up (imports, parsing)
        code = 128 + exc.args[0] if isinstance(exc, _Signalled) else 130
        print("\ninterp-heads: interrupted; rerun the same command to resume", file=sys.stderr)
        return code
    except BrokenPipeError:  # `interp-heads ... | head`: the reader left; say nothing
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    try:
        args, rest = parser.parse_known_args(argv)
        if rest and not (args.command == "tasks" and args.action == "build"):
            parser.error(f"unrecognized arguments: {' '.join(rest)}")
        args.rest = rest
    except SystemExit as exc:
        return int(exc.code or 0)
    from interp_heads import runfolder

    bad = _bad_input()
    debug = bool(os.environ.get("INTERP_HEADS_DEBUG"))
    formatwarning, warnings.formatwarning = warnings.formatwarning, _one_line_warning
    handlers = {}
    for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if sig is not None:
            try:
                handlers[sig] = signal.signal(sig, _on_signal)
            except ValueError:  # not the main thread
                pass
    try:
        with runfolder.held_locks(), _removes_unused(args.command):
            if args.command in ("attribute", "ablate", "run"):
                from interp_heads import threads

                threads.configure(args.threads)
            return args.func(args)
    except bad as exc:
        msg = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
        print(f"interp-heads: error: {_cut(msg) or type(exc).__name__}", file=sys.stderr)
        return 2
    except (BrokenPipeError, KeyboardInterrupt):
        raise
    except OSError as exc:  # the machine, not the input: disk full, permissions, I/O
        if debug:
            raise
        print(f"interp-heads: error: {_cut(str(exc)) or type(exc).__name__}", file=sys.stderr)
        return 1
    except Exception as exc:  # a bug, not bad input: one line, the traceback on request
        if debug:
            raise
        print(
            f"interp-heads: internal error: {type(exc).__name__}: {_cut(str(exc))} "
            "(INTERP_HEADS_DEBUG=1 shows the traceback)",
            file=sys.stderr,
        )
        return 1
    finally:
        warnings.formatwarning = formatwarning
        for sig, old in handlers.items():
            signal.signal(sig, old)


if __name__ == "__main__":
    sys.exit(main())
