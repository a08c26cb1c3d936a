"""A user's variant as a plugin (``interp_heads.plugins``): docs/extending.md's "A plugin" run as
printed, through ``--plugin``, ``INTERP_HEADS_PLUGINS`` and an installed entry point.

The page's two files (the plugin module and its ``pyproject.toml``) are written into a temporary
folder; its shell command runs in this process with that folder on ``sys.path`` (what
``PYTHONPATH=my_kinds`` does) and its generations are compared with hand-written TransformerLens
hooks. The entry point is installed the way ``pip install`` leaves one: a ``*.dist-info`` folder
with ``entry_points.txt`` beside the module, which ``importlib.metadata`` finds on ``sys.path``.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
import tomllib

import pandas as pd
import pytest

from interp_heads import plugins
from interp_heads.interventions.kinds import KINDS
from tests.helpers import DATA, ROOT, cli, cli_probe

DOC = ROOT / "docs" / "extending.md"


def _section() -> str:
    return DOC.read_text(encoding="utf-8").split("\n### A plugin\n", 1)[1].split("\n### ", 1)[0]


def _block(lang: str) -> str:
    (block,) = re.findall(rf"```{lang}\n(.*?)```", _section(), re.S)
    return block


def _files(root):
    """The page's files written under ``root`` at the paths their first line names."""
    written = {}
    for lang in ("python", "toml"):
        text = _block(lang)
        path = root / text.splitlines()[0].lstrip("# ").strip()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written[path.name] = path
    return written


def _command() -> tuple[dict, list[str]]:
    """The page's command: ``(environment assignments, argv after interp-heads)``."""
    (line,) = [ln for ln in _block("shell").splitlines() if "interp-heads" in ln]
    words = shlex.split(line)
    at = words.index("interp-heads")
    env = dict(w.split("=", 1) for w in words[:at])
    return env, words[at + 1 :]


@pytest.fixture
def unloaded():
    """The plugin module and the names it registers are gone after the test."""
    before = set(KINDS.names())
    yield
    for name in set(KINDS.names()) - before:
        KINDS.unregister(name)
    sys.modules.pop("sign_flip", None)


def test_the_pages_plugin_runs_as_printed(tmp_path, monkeypatch, unloaded, tiny):
    files = _files(tmp_path)
    env, argv = _command()
    assert env == {"PYTHONPATH": "my_kinds"} and files["sign_flip.py"].parent.name == "my_kinds"
    assert "sign_flip" not in KINDS.names()
    monkeypatch.syspath_prepend(str(tmp_path / env["PYTHONPATH"]))
    out = tmp_path / "out"
    argv[argv.index("--out") + 1] = str(out)
    argv[argv.index("--task") + 1] = str(ROOT / argv[argv.index("--task") + 1])
    assert cli(*argv, "--quiet") == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["ablation"] == "sign_flip" and manifest["config"]["strength"] == 2
    gens = pd.read_json(out / "generations.jsonl", lines=True, dtype={"example_id": str})
    masked = gens[(gens.k == 2) & (gens.selection == "TopK")]
    assert len(masked) == 6 and set(masked["heads"]) == {"L0H1,L2H3"}
    # the reference: plain TransformerLens hooks that multiply those heads' z by -2
    from interp_heads.generation.decode import generate
    from interp_heads.tasks import load_task
    from interp_heads.tasks.prompts import render

    task = load_task(str(DATA / "tiny_echo.jsonl"))
    ids = masked["example_id"].tolist()
    prompts = render(tiny, [e.prompt for e in task if e.id in ids], fmt=task.fmt or "auto")

    def flip(heads):
        def hook(z, hook):
            z = z.clone()
            z[:, :, heads] = -2 * z[:, :, heads]
            return z

        return hook

    hooks = [("blocks.0.attn.hook_z", flip([1])), ("blocks.2.attn.hook_z", flip([3]))]
    with tiny.hooks(fwd_hooks=hooks):
        want = generate(tiny, prompts, 3, batch_size=4)
    assert masked.set_index("example_id").loc[ids, "generation"].tolist() == want
    assert generate(tiny, prompts, 3, batch_size=4) != want  # the check can tell a flip apart


def _install(site, files) -> None:
    """What ``pip install ./my_kinds`` leaves on ``site``: the module and a dist-info folder
    whose ``entry_points.txt`` holds the pyproject's entry points."""
    project = tomllib.loads(files["pyproject.toml"].read_text())["project"]
    info = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir(parents=True)
    info.joinpath("METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
    )
    lines = []
    for group, points in project["entry-points"].items():
        lines += [f"[{group}]", *(f"{name} = {value}" for name, value in points.items()), ""]
    info.joinpath("entry_points.txt").write_text("\n".join(lines))
    site.joinpath("sign_flip.py").write_text(files["sign_flip.py"].read_text())


def test_an_installed_entry_point_needs_no_flag(tmp_path, monkeypatch, unloaded, capsys):
    site = tmp_path / "site-packages"
    _install(site, _files(tmp_path))
    monkeypatch.syspath_prepend(str(site))
    assert [ep.name for ep in plugins.entry_points()] == ["sign_flip"]
    assert cli("ablate", "--help") == 0
    shown = capsys.readouterr().out
    assert "sign_flip" in shown and "--strength STRENGTH" in shown
    assert "sign_flip: z becomes -strength * z" in " ".join(shown.split())
    assert KINDS.get("sign_flip").Options().strength == 1.0


def test_the_environment_variable_names_plugins(tmp_path, monkeypatch, unloaded, capsys):
    _files(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path / "my_kinds"))
    monkeypatch.setenv(plugins.ENV, " , sign_flip")
    assert cli("ablate", "--help") == 0
    assert "--strength STRENGTH" in capsys.readouterr().out


def test_the_flag_is_read_before_the_parser(capsys):
    argv = ["--plugin", "a", "ablate", "--plugin=b", "--plug", "c", "--pl=d", "--p", "x", "--", "--plugin", "e"]  # fmt: skip
    assert plugins.from_argv(argv) == ["a", "b", "c", "d"]
    assert plugins.from_argv(["ablate", "--plugin"]) == []
    assert cli("ablate", "--plugin") == 2  # nothing after it: the parser's error
    assert "--plugin: expected one argument" in capsys.readouterr().err


def _probe(tmp_path, *argv, **env):
    """The CLI in a fresh interpreter with ``tmp_path`` (the plugins) on its path."""
    import os

    path = {"PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    return cli_probe(*argv, cwd=ROOT, env={**path, **env})


def test_a_plugin_that_fails_to_import_is_one_line_and_exit_2(tmp_path):
    tmp_path.joinpath("broken_kind.py").write_text("raise RuntimeError('half written')\n")
    cases = {
        ("--plugin", "no_such_plugin_module"): "plugin 'no_such_plugin_module' (--plugin) failed "
        "to import: ModuleNotFoundError: No module named 'no_such_plugin_module'",
        ("--plugin", "broken_kind"): "plugin 'broken_kind' (--plugin) failed to import: "
        "RuntimeError: half written",
    }
    for flags, said in cases.items():
        got, err = _probe(tmp_path, *flags, "ablate", "--help")
        assert got == {"code": 2, "heavy": []}, err
        assert err.splitlines() == [f"interp-heads: error: {said}"]
    got, err = _probe(tmp_path, "tasks", "list", **{plugins.ENV: "broken_kind"})
    line = (
        f"interp-heads: error: plugin 'broken_kind' ({plugins.ENV}) failed to import: "
        "RuntimeError: half written"
    )
    assert got["code"] == 2 and err.splitlines() == [line]
    # INTERP_HEADS_DEBUG: the module's own traceback above the same line, still exit 2
    got, err = _probe(tmp_path, "tasks", "list", **{plugins.ENV: "broken_kind"},
                      INTERP_HEADS_DEBUG="1")  # fmt: skip
    assert got["code"] == 2 and err.splitlines()[-1] == line
    assert 'broken_kind.py", line 1' in err and "Traceback" in err


def test_loading_a_plugin_keeps_the_early_checks_light(tmp_path):
    """The page's plugin imports the kinds' registry, not torch: a bad task path is still said
    before torch, TransformerLens or pandas load."""
    _files(tmp_path)
    got, err = _probe(
        tmp_path / "my_kinds", "--plugin", "sign_flip", "ablate", "--model", "tiny", "--task",
        tmp_path / "nosuch.jsonl", "--heads", "L0H1", "--ablation", "sign_flip", "--strength",
        "2", "--out", tmp_path / "out",
    )  # fmt: skip
    assert got == {"code": 2, "heavy": []}, err
    assert "no such file" in err and not (tmp_path / "out").exists()
