"""The command line: one sub-command per job, flags built from the config's own fields."""

from __future__ import annotations

import argparse
import sys

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
    me = sys.modules["interp_heads.cli"]  # through the package, so a test's replacement is seen
    names = ("tasks", "attribute", "ablate", "run", "report", "score")
    cmds = {n: getattr(me, f"cmd_{n}") for n in names}
    p = _Parser(prog="interp-heads", description=me.__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"interp-heads {_version()}")
    sub = p.add_subparsers(dest="command", required=True)
    for add in (_tasks, _attribute, _ablate, _run, _report_and_score):
        add(sub, cmds)
    return p


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
        type=validation.positive_int,
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

    a = sub.add_parser(
        "attribute", help=cmds["attribute"].__doc__, description=cmds["attribute"].__doc__
    )
    _common(a, "output folder")
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
    cli_flag(a, "lookahead")
    cli_flag(a, "verify")
    a.set_defaults(func=cmds["attribute"])


def _ablate(sub, cmds) -> None:
    """``ablate``: mask TopK and random heads of one task while it generates."""
    from interp_heads.config import validation
    from interp_heads.config.flags import cli_flag
    from interp_heads.config.sections import PLACEMENT

    b = sub.add_parser("ablate", help=cmds["ablate"].__doc__, description=cmds["ablate"].__doc__)
    _common(b, "output folder (resumable)")
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
    cli_flag(b, "positions")
    cli_flag(b, "scale_factor", type=float)
    cli_flag(b, "n_eval")
    b.add_argument(
        "--skip",
        type=validation.non_negative_int,
        default=0,
        help="skip the first N examples of the task file",
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
    cli_flag(b, "reference")
    cli_flag(b, "free_form", action="store_true")
    cli_flag(b, "elbow", action="store_true")
    for name in PLACEMENT:
        if name != "n_devices":  # --n-devices is with the model flags above
            cli_flag(b, name)
    b.set_defaults(func=cmds["ablate"])


def _run(sub, cmds) -> None:
    """``run``: the whole pipeline from a TOML config."""
    from interp_heads.config import validation
    from interp_heads.config.flags import cli_flag
    from interp_heads.config.sections import PLACEMENT

    r = sub.add_parser("run", help=cmds["run"].__doc__, description=cmds["run"].__doc__)
    r.add_argument("--config", required=True, help="TOML config, e.g. configs/seed_figure.toml")
    r.add_argument(
        "--out",
        required=True,
        type=validation.out_arg,
        help="run folder (rerun the same command to resume)",
    )
    cli_flag(r, "threads", help="torch CPU threads (None: the config's, else cores shared)")
    for name in PLACEMENT:  # override the config's
        cli_flag(r, name, default=None)
    r.add_argument("--force", action="store_true", help="reuse a folder holding a different config")
    r.add_argument("--quiet", action="store_true", help="no progress bars")
    r.set_defaults(func=cmds["run"])


def _report_and_score(sub, cmds) -> None:
    """``report`` and ``score``: a run folder's page, more metrics."""
    from interp_heads.config.flags import cli_flag

    rp = sub.add_parser("report", help=cmds["report"].__doc__, description=cmds["report"].__doc__)
    rp.add_argument("dir", help="run folder")
    rp.set_defaults(func=cmds["report"])

    sc = sub.add_parser("score", help=cmds["score"].__doc__, description=cmds["score"].__doc__)
    sc.add_argument("dir", help="run folder")
    sc.add_argument("--metrics", required=True, help="comma-separated answer metrics, e.g. comet")
    cli_flag(sc, "comet_model")
    sc.set_defaults(func=cmds["score"])


def _cut(msg: str, limit: int = MAX_MESSAGE) -> str:
    """First line of ``msg``, at most ``limit`` characters."""
    line = msg.strip().splitlines()[0] if msg.strip() else ""
    return line if len(line) <= limit else line[: limit - 15] + f" ... [{len(line)} chars]"
