"""The command line: one sub-command per job, flags built from the config's own fields.

``interp-heads --help`` imports no command module (they import torch, pandas and the model code,
seconds of start-up): each command's help is its function's docstring read from the module's
source (:func:`command_doc`), and the parsed command is looked up on :mod:`interp_heads.cli` when
it runs. Help texts built from docstrings and config field descriptions are plain text: reST
markup (````code````, ``:mod:`~a.b```) is stripped (:func:`plain`).
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import inspect
import re
import sys

MAX_MESSAGE = 300  # characters of an error line; longer messages are cut
COMMANDS = {  # sub-command -> the module whose cmd_<name> runs it
    "tasks": "interp_heads.cli.tasks",
    "attribute": "interp_heads.cli.attribute",
    "ablate": "interp_heads.cli.ablate",
    "run": "interp_heads.cli.run",
    "report": "interp_heads.cli.run",
    "score": "interp_heads.cli.score",
    "study": "interp_heads.cli.study",
}
_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`~?([^`<]*?)(?:\s*<[^>]*>)?`")


def plain(text: str | None) -> str | None:
    """``text`` without reST markup, as a terminal shows it: ````x```` -> ``x``,
    ``:func:`~a.b.c``` -> ``c``, ``:mod:`a.b``` -> ``a.b``."""
    if text is None:
        return None

    def role(m: re.Match) -> str:
        target = m.group(1).strip()
        return target.rsplit(".", 1)[-1] if m.group(0).split("`", 1)[1].startswith("~") else target

    return _ROLE.sub(role, text).replace("``", "")


def command_doc(name: str) -> str:
    """The docstring of ``cmd_<name>``, read from its module's source without importing it."""
    spec = importlib.util.find_spec(COMMANDS[name])
    tree = ast.parse(open(spec.origin, encoding="utf-8").read())  # noqa: SIM115
    func = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == f"cmd_{name}")
    return plain(inspect.cleandoc(ast.get_docstring(func) or "")) or ""


def _dispatch(name: str):
    """The function a parsed command runs: ``interp_heads.cli.cmd_<name>``, looked up when it runs
    (so nothing heavy loads for ``--help``, and a test's replacement is the one called)."""

    def run(args):
        return getattr(sys.modules["interp_heads.cli"], f"cmd_{name}")(args)

    run.__name__ = f"cmd_{name}"
    return run


class _Commands(dict):
    """``{name: runner}`` whose runners carry their help (``__doc__``) for the sub-parsers."""

    def __missing__(self, name: str):
        run = _dispatch(name)
        run.__doc__ = command_doc(name)
        self[name] = run
        return run


# --------------------------------------------------------------------------- parser
class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (``interp-heads: error: ...``, exit 2) and defaults in help."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", argparse.ArgumentDefaultsHelpFormatter)
        for key in ("description", "epilog"):
            if key in kwargs:
                kwargs[key] = plain(kwargs[key])
        super().__init__(*args, **kwargs)

    def add_argument(self, *args, **kwargs):
        """``add_argument`` with the help text as plain text (config field descriptions)."""
        if isinstance(kwargs.get("help"), str):
            kwargs["help"] = plain(kwargs["help"])
        return super().add_argument(*args, **kwargs)

    def error(self, message):
        self.exit(2, f"interp-heads: error: {cut_line(message)} (see {self.prog} --help)\n")


def _version() -> str:
    """The package's version (``interp_heads.__version__``: pyproject.toml reads it from there)."""
    import interp_heads

    return interp_heads.__version__


def build_parser() -> argparse.ArgumentParser:
    me = sys.modules["interp_heads.cli"]
    cmds = _Commands()
    p = _Parser(prog="interp-heads", description=me.__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"interp-heads {_version()}")
    _plugin_flag(p, default=[])
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for add in (_tasks, _attribute, _ablate, _run, _report_and_score, _study):
        add(sub, cmds)
    for command in sub.choices.values():  # also after the sub-command, where users put flags
        _plugin_flag(command, default=argparse.SUPPRESS)
    return p


def _plugin_flag(parser, default) -> None:
    """``--plugin MODULE``: a module that registers a user's variants. ``interp_heads.cli`` reads
    it from the argument list and imports the module before this parser is built
    (``plugins.from_argv``), so the names and options it registers are choices and flags here.
    A sub-command's copy defaults to SUPPRESS so it never hides the top-level one's values."""
    parser.add_argument(
        "--plugin", action="append", default=default, metavar="MODULE",
        help="import MODULE first: its registered kinds, metrics, methods, selections, studies "
        "are then accepted (repeatable; also INTERP_HEADS_PLUGINS=mod,... and installed entry "
        "points of interp_heads.plugins)",
    )  # fmt: skip


def _tasks(sub, cmds) -> None:
    """``tasks list|show|build``."""
    from interp_heads.config import validation

    t = sub.add_parser(
        "tasks",
        help=cmds["tasks"].__doc__,
        description=cmds["tasks"].__doc__,
        epilog="tasks build passes any further arguments to python -m interp_heads.tasks.builder",
    )
    t.add_argument("action", choices=["list", "show", "build"])
    t.add_argument(
        "name", nargs="?", help="task name, JSONL file or CogQA .json file (show: its skills)"
    )
    t.add_argument(
        "-n",
        type=validation.positive_int_arg,
        default=None,
        help="examples to print (show: 3 when unset) or build (per task)",
    )
    t.set_defaults(func=cmds["tasks"])


def _common(sp, out_help: str) -> None:
    """The flags ``attribute`` and ``ablate`` share: model, task, output folder, placement."""
    from interp_heads.config import validation
    from interp_heads.config.flags import cli_flag

    cli_flag(sp, "model")
    sp.add_argument("--task", required=True, help="built-in task name or task JSONL file")
    sp.add_argument("--out", required=True, type=validation.out_arg, help=out_help)
    for name in ("batch_size", "device", "threads", "n_devices", "backend"):
        cli_flag(sp, name)
    sp.add_argument("--force", action="store_true", help="reuse a folder holding other results")
    sp.add_argument("--quiet", action="store_true", help="no progress bars")


def _attribute(sub, cmds) -> None:
    """``attribute``: rank the heads of one task."""
    from interp_heads.config.flags import cli_flag
    from interp_heads.config.options import section_options

    a = sub.add_parser(
        "attribute", help=cmds["attribute"].__doc__, description=cmds["attribute"].__doc__
    )
    _common(a, "output folder")
    cli_flag(a, "attribution", "--method")
    cli_flag(a, "ablation", help="the ablation kind ablation_atp estimates (the one you mask with)")
    cli_flag(a, "n_rank", "--n-examples")
    _no_filter(a, "rank on the first N examples, answered correctly or not")
    cli_flag(a, "fmt")
    cli_flag(a, "max_new_tokens", help="answer length when checking correctness")
    cli_flag(a, "refine")
    for name in section_options("attribution", of=lambda method: not method.multi_task):
        cli_flag(a, name)  # the options of every method that ranks one task
    cli_flag(a, "verify")
    cli_flag(a, "known_heads", action=argparse.BooleanOptionalAction)
    a.set_defaults(func=cmds["attribute"])


def _ablate(sub, cmds) -> None:
    """``ablate``: mask TopK and random heads of one task while it generates."""
    from interp_heads.config import validation
    from interp_heads.config.flags import cli_flag
    from interp_heads.config.options import placement_keys, section_options

    b = sub.add_parser("ablate", help=cmds["ablate"].__doc__, description=cmds["ablate"].__doc__)
    _common(b, "output folder (resumable)")
    cli_flag(b, "ranking")
    cli_flag(b, "ranking_task")
    cli_flag(b, "heads", type=validation.names_arg)
    cli_flag(
        b,
        "ks",
        "--k",
        type=validation.ks_arg,
        default=None,
        help="numbers of masked heads, e.g. 16,32,64,128 (None: 16,32,64,128; with --heads "
        "their number)",
    )
    cli_flag(b, "seeds")
    cli_flag(b, "selections", type=validation.names_arg)
    cli_flag(b, "metrics", type=validation.names_arg)
    for name in ("ablation", "positions", "n_eval", "skip"):
        cli_flag(b, name)
    for section in ("sweep", "metrics", "ablation"):  # the selections', metrics', kinds' options
        for name in section_options(section):
            cli_flag(b, name)
    _no_filter(b, "evaluate examples whether or not the unmasked model gets them right")
    for name in ("allow_overlap", "allow_other_model", "allow_other_task"):
        cli_flag(b, name)
    cli_flag(
        b, "fmt", help="prompt format (None: the ranking's, else the task file's, else measured)"
    )
    for name in ("max_new_tokens", "reference", "batch_padding"):
        cli_flag(b, name)
    for name in ("free_form", "elbow", "damage_matched"):
        cli_flag(b, name)
    for name in placement_keys():
        if name != "n_devices":  # --n-devices is with the model flags above
            cli_flag(b, name)
    b.set_defaults(func=cmds["ablate"])


def _no_filter(parser, help: str) -> None:
    """``--no-filter``: the config's ``filter_correct = false`` (no "(default: True)" in the help:
    that is the destination's default, not the flag's)."""
    parser.add_argument(
        "--no-filter", dest="filter_correct", action="store_false", default=argparse.SUPPRESS,
        help=help,
    )  # fmt: skip


def _run(sub, cmds) -> None:
    """``run``: the whole pipeline from a TOML config."""
    from interp_heads.config import validation
    from interp_heads.config.flags import cli_flag
    from interp_heads.config.options import placement_keys

    r = sub.add_parser("run", help=cmds["run"].__doc__, description=cmds["run"].__doc__)
    r.add_argument("--config", required=True, help="TOML config, e.g. configs/seed_figure.toml")
    r.add_argument(
        "--out",
        required=True,
        type=validation.out_arg,
        help="run folder (rerun the same command to resume)",
    )
    cli_flag(r, "threads", help="torch CPU threads (None: the config's, else cores shared)")
    for name in placement_keys():  # override the config's
        cli_flag(r, name, default=None)
    r.add_argument("--force", action="store_true", help="reuse a folder holding a different config")
    r.add_argument("--quiet", action="store_true", help="no progress bars")
    r.set_defaults(func=cmds["run"])


def _report_and_score(sub, cmds) -> None:
    """``report`` and ``score``: a run folder's page, more metrics."""
    from interp_heads.config.flags import cli_flag

    rp = sub.add_parser("report", help=cmds["report"].__doc__, description=cmds["report"].__doc__)
    rp.add_argument("dir", help="run folder")
    rp.add_argument(
        "--static",
        type=_formats_arg,
        default=None,
        metavar="FORMATS",
        help="also write every figure as figures/NAME.FORMAT, e.g. svg,png (svg, pdf, png; "
        "needs kaleido and a Chrome or Chromium)",
    )
    rp.set_defaults(func=cmds["report"])

    sc = sub.add_parser("score", help=cmds["score"].__doc__, description=cmds["score"].__doc__)
    sc.add_argument("dir", help="run folder")
    sc.add_argument("--metrics", required=True, help="comma-separated answer metrics, e.g. comet")
    cli_flag(sc, "comet_model")
    sc.set_defaults(func=cmds["score"])


def _study(sub, cmds) -> None:
    """``study``: a registered multi-run study (interp_heads.studies)."""
    from interp_heads.config import validation
    from interp_heads.config.flags import cli_flag

    st = sub.add_parser("study", help=cmds["study"].__doc__, description=cmds["study"].__doc__)
    st.add_argument("name", nargs="?", help="the study's registered name (see --list)")
    st.add_argument("--list", action="store_true", help="list the studies and exit")
    st.add_argument(
        "--size", choices=["small", "full"], default="full", help="how big its runs are"
    )
    st.add_argument(
        "--runs", type=validation.out_arg, default="runs", help="folder holding its run folders"
    )
    st.add_argument(
        "--docs", default=None,
        help="folder its pages are written to (None: docs/ for --size full; for --size small "
        "RUNS/NAME-small/docs, never over the committed pages)",
    )  # fmt: skip
    st.add_argument("--param", action="append", metavar="KEY=VALUE",
                    help="a study parameter (repeatable), e.g. --param task=my.jsonl")  # fmt: skip
    cli_flag(st, "threads", help="torch CPU threads (None: the configs', else cores shared)")
    st.add_argument("--force", action="store_true", help="reuse folders holding a different config")
    st.add_argument(
        "--no-shared", dest="shared", action="store_false",
        help="each run generates its own conditions (default: the runs share them through "
        "RUNS/shared)",
    )  # fmt: skip
    st.add_argument("--executor", default="local", metavar="{local,ray}",
                    help="a registered executor that runs whole runs: local: one run after "
                    "another; ray: one Ray task a run (runs that read another's folder wait for "
                    "it)")  # fmt: skip
    st.add_argument("--ray-address", default=None, help="with --executor ray: the cluster "
                    "(default: a local one)")  # fmt: skip
    st.add_argument("--cpus-per-run", type=validation.positive_int_arg, default=1,
                    help="with --executor ray: CPUs (and torch threads) per run")  # fmt: skip
    st.add_argument("--quiet", action="store_true", help="no progress bars")
    st.set_defaults(func=cmds["study"])


def _formats_arg(value: str) -> list[str]:
    """``--static svg,png``: static image formats (``figures.static.FORMATS``)."""
    from interp_heads.figures.static import parse_formats

    try:
        return parse_formats(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def cut_line(msg: str, limit: int = MAX_MESSAGE) -> str:
    """First line of ``msg``, at most ``limit`` characters, without bidi controls (a task named
    with U+202E reads as written on stderr, as on the pages: ``figures.escape.strip_bidi``)."""
    from interp_heads.figures.escape import strip_bidi

    msg = strip_bidi(msg)
    line = msg.strip().splitlines()[0] if msg.strip() else ""
    return line if len(line) <= limit else line[: limit - 15] + f" ... [{len(line)} chars]"
