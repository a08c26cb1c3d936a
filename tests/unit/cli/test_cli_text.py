"""What the command line says about itself: plain-text help, fast, and one version everywhere."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from interp_heads.cli import build_parser
from interp_heads.cli.parser import plain
from tests.helpers import ROOT

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
SUBCOMMANDS = ("tasks", "attribute", "ablate", "run", "report", "score")


def _helps() -> dict[str, str]:
    parser = build_parser()
    subs = parser._subparsers._group_actions[0].choices
    return {"": parser.format_help(), **{n: subs[n].format_help() for n in SUBCOMMANDS}}


def test_help_is_plain_text():
    for name, text in _helps().items():
        assert "``" not in text, name
        assert not re.search(r":(mod|func|class|meth|data|attr):`", text), name
    attribute = _helps()["attribute"]
    assert "first --n-examples examples" in attribute and "--method auto: atp" in attribute


def test_plain_strips_rst_markup():
    assert plain("``--k`` and ``x``") == "--k and x"
    assert plain("see :func:`~interp_heads.sweep.stats.verdict`") == "see verdict"
    assert plain("see :mod:`interp_heads.sweep`, :class:`A <pkg.A>`") == "see interp_heads.sweep, A"
    assert plain("50% of %(default)s") == "50% of %(default)s"  # argparse's own markup stays


@pytest.mark.parametrize("argv", [["--help"], ["attribute", "--help"], ["ablate", "--help"]])
def test_help_loads_no_model_code(argv):
    """--help must not import torch, pandas or TransformerLens (seconds of start-up)."""
    code = (
        "import sys, time\n"
        "from interp_heads.cli import main\n"
        f"t = time.perf_counter(); code = main({argv!r}); t = time.perf_counter() - t\n"
        "heavy = [m for m in ('torch', 'pandas', 'transformer_lens', 'plotly') if m in sys.modules]\n"
        "print(code, heavy, round(t, 2))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("0 [] "), last


def test_parsed_command_runs_the_package_function(monkeypatch):
    seen = []
    monkeypatch.setattr("interp_heads.cli.cmd_report", lambda args: seen.append(args.dir) or 0)
    args = build_parser().parse_args(["report", "somewhere"])
    assert args.func(args) == 0 and seen == ["somewhere"]


def test_one_version_everywhere(capsys):
    import interp_heads
    from interp_heads.store.provenance import versions

    changelog = (ROOT / "CHANGELOG.md").read_text()
    top = re.search(r"^## (\d+\.\d+\.\d+)", changelog, re.M).group(1)
    from setuptools.config.pyprojecttoml import read_configuration

    built = read_configuration(ROOT / "pyproject.toml")["project"]["version"]
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--version"])
    printed = capsys.readouterr().out.split()[-1]
    assert printed == interp_heads.__version__ == top == built
    assert versions(("interp_heads",)) == {"interp_heads": top}  # what a manifest records


def test_the_papers_figure_is_named_after_the_paper():
    """'seed figure' / 'the seed's ...' read like --seeds (random draws): help texts, docs and
    pages name the paper (Cognitive Mirrors). Config file names (seed_figure.toml) stay."""
    said = re.compile(r"seed[ -]figure|seed protocol|seed paper|the seed's|seed's control", re.I)
    for name, text in _helps().items():
        assert not said.search(text.replace("seed_figure", "")), name
    others = {"compare.md", "compare_page.py"}  # the compare page has its own helper
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
             *sorted((ROOT / "docs").glob("*.py")), *sorted((ROOT / "interp_heads").rglob("*.py"))]  # fmt: skip
    hits = [
        f"{p.relative_to(ROOT)}: {m.group(0)}"
        for p in files
        if p.name not in others
        for m in said.finditer(
            p.read_text().replace("seed_figure", "").replace("--seed-figure", "")
        )
    ]
    assert not hits, hits[:5]
