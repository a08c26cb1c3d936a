"""``interp-heads``: tasks, attribution, ablation sweeps, whole runs and reports from the shell.

Bad input (task file, model, k, head label, empty task, output folder, config, flag value) ends
with one line ``interp-heads: error: ...`` on stderr and exit status 2, before any file is written.
A failing machine (disk full, permissions) ends with one ``error:`` line naming the file and exit
status 1; a bug with one ``internal error:`` line and exit status 1. ``INTERP_HEADS_DEBUG=1``
shows the traceback of anything but bad input. Ctrl-C, SIGTERM and SIGHUP end with "interrupted;
rerun the same command to resume" (exit 130, 143, 129) and release the run folder's lock. One
process writes a run folder at a time (``interp_heads.store``). The user's plugins
(``--plugin MODULE``, ``INTERP_HEADS_PLUGINS``, installed entry points: ``interp_heads.plugins``)
are imported before the parser is built; one that fails to import is bad input (its traceback
too with ``INTERP_HEADS_DEBUG=1``).
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
import warnings

__all__ = ["PipelineError", "build_parser", "load_ranking", "main", "ranking_provenance"]

# Nothing heavy is imported at module level: ``main`` catches Ctrl-C first, then these load.
_LAZY = {
    "PipelineError": "interp_heads.errors",
    "load_ranking": "interp_heads.pipeline.rankings",
    "ranking_provenance": "interp_heads.pipeline.rankings",
    "cmd_ablate": "interp_heads.cli.ablate",
    "cmd_attribute": "interp_heads.cli.attribute",
    "cmd_report": "interp_heads.cli.run",
    "cmd_run": "interp_heads.cli.run",
    "cmd_tasks": "interp_heads.cli.tasks",
    "cmd_score": "interp_heads.cli.score",
    "cmd_study": "interp_heads.cli.study",
}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'interp_heads.cli' has no attribute {name!r}")


from interp_heads.cli.parser import MAX_MESSAGE, build_parser, cut_line  # noqa: E402, F401


def _one_line_warning(message, category, filename, lineno, line=None) -> str:
    return f"interp-heads: warning: {cut_line(str(message), 2 * MAX_MESSAGE)}\n"


class _Signalled(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread so every lock is released on the way out."""


def _on_signal(signum, _frame) -> None:
    raise _Signalled(signum)


def _bad_input() -> tuple[type[BaseException], ...]:
    """The exceptions that mean bad input (exit 2); anything else is the machine or a bug."""
    from interp_heads.errors import ModelLoadError, PipelineError  # no torch: said before it loads
    from interp_heads.metrics import MetricUnavailable
    from interp_heads.store import RunFolderBusy as busy
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
    from interp_heads.store import lifecycle

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


def _load_plugins(argv: list[str]) -> int | None:
    """Import the user's plugins (``interp_heads.plugins``) before the parser reads the
    registries; a module that fails to import is one line naming it and exit status 2 (bad
    input; ``INTERP_HEADS_DEBUG=1`` prints the module's traceback above the line)."""
    from interp_heads import plugins

    try:
        plugins.load_plugins(plugins.from_argv(argv))
    except plugins.PluginError as exc:
        if os.environ.get("INTERP_HEADS_DEBUG") and exc.__cause__ is not None:
            import traceback

            traceback.print_exception(exc.__cause__, file=sys.stderr)
        print(f"interp-heads: error: {cut_line(str(exc))}", file=sys.stderr)
        return 2
    return None


def _main(argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    failed = _load_plugins(argv)
    if failed is not None:
        return failed
    parser = build_parser()
    try:
        args, rest = parser.parse_known_args(argv)
        if rest and not (args.command == "tasks" and args.action == "build"):
            parser.error(f"unrecognized arguments: {' '.join(rest)}")
        args.rest = rest
    except SystemExit as exc:
        return int(exc.code or 0)
    from interp_heads import store
    from interp_heads.cli.early import check_early

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
        with store.held_locks(), _removes_unused(args.command):
            check_early(args)  # bad input is one line before torch and TransformerLens load
            if args.command in ("attribute", "ablate", "run"):
                from interp_heads.models import threads

                threads.configure(args.threads)
            return args.func(args)
    except bad as exc:
        msg = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
        print(f"interp-heads: error: {cut_line(msg) or type(exc).__name__}", file=sys.stderr)
        return 2
    except (BrokenPipeError, KeyboardInterrupt):
        raise
    except OSError as exc:  # the machine, not the input: disk full, permissions, I/O
        if debug:
            raise
        print(f"interp-heads: error: {cut_line(str(exc)) or type(exc).__name__}", file=sys.stderr)
        return 1
    except Exception as exc:  # a bug, not bad input: one line, the traceback on request
        if debug:
            raise
        print(
            f"interp-heads: internal error: {type(exc).__name__}: {cut_line(str(exc))} "
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
