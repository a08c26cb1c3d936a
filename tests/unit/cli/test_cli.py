"""The ``interp-heads`` CLI on the tiny model: subcommands, and bad input -> one line, exit 2, no damage."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from tests.helpers import DATA, cli, snapshot

TASK = str(DATA / "tiny_echo.jsonl")
CONFIG_TEXT = (DATA / "tiny.toml").read_text().replace("tests/data/", f"{DATA}/")


@pytest.fixture(scope="module")
def earlier(tmp_path_factory):
    """A finished run (``run``) and an ablation folder (``attribute`` + ``ablate``)."""
    root = tmp_path_factory.mktemp("cli")
    assert (
        cli("run", "--config", _bad_config(root, CONFIG_TEXT), "--out", root / "run", "--quiet")
        == 0
    )
    assert (
        cli(
            "attribute",
            "--model",
            "tiny",
            "--task",
            TASK,
            "--n-examples",
            4,
            "--no-filter",
            "--out",
            root / "attr",
        )
        == 0
    )
    assert (
        cli(
            "ablate",
            "--model",
            "tiny",
            "--task",
            TASK,
            "--ranking",
            root / "attr",
            "--k",
            "2,4",
            "--seeds",
            2,
            "--metrics",
            "accuracy",
            "--skip",
            4,
            "--n-eval",
            6,
            "--no-filter",
            "--max-new-tokens",
            3,
            "--out",
            root / "abl",
            "--quiet",
        )
        == 0
    )
    return root


def test_attribute_and_ablate_write_their_files(earlier):
    attr, abl = earlier / "attr", earlier / "abl"
    assert {"attribution.parquet", "ranking.csv", "index.html", "manifest.json"} <= {
        p.name for p in attr.iterdir()
    }
    assert (attr / "figures" / "heatmap_tiny_echo.html").exists()
    ranking = pd.read_csv(attr / "ranking.csv")
    rec = pd.read_parquet(abl / "sweep.parquet")
    top2 = rec.merge(pd.read_json(abl / "generations.jsonl", lines=True)).query(
        "selection == 'TopK' and k == 2"
    )
    assert top2.heads.iloc[0] == ",".join(ranking.label[:2])
    assert set(rec.example_id.astype(str)) == {f"t{i}" for i in range(4, 10)}
    assert {"summary.csv", "generations.jsonl", "index.html"} <= {p.name for p in abl.iterdir()}


def test_the_ablate_page_names_the_rankings_order(earlier):
    """The page's "order:" is the masked ranking's, read from ranking.csv here (it said "none"
    when the heads came from a ranking: the config's heads are empty then)."""
    labels = pd.read_csv(earlier / "attr" / "ranking.csv").sort_values("rank").label.tolist()
    top = ", ".join(labels[:16]) + (" ..." if len(labels) > 16 else "")
    html = (earlier / "abl" / "index.html").read_text()
    assert f"order: {top}.</p>" in html and "order: none" not in html


def test_ablate_explicit_heads_and_report(earlier, tmp_path, capsys):
    out = tmp_path / "heads"
    assert (
        cli(
            "ablate",
            "--model",
            "tiny",
            "--task",
            TASK,
            "--heads",
            "L0H1,L2H3",
            "--seeds",
            1,
            "--no-filter",
            "--metrics",
            "accuracy",
            "--n-eval",
            3,
            "--max-new-tokens",
            2,
            "--out",
            out,
            "--quiet",
        )
        == 0
    )
    gens = pd.read_json(out / "generations.jsonl", lines=True)
    assert set(gens.query("selection == 'TopK'").heads) == {"L0H1,L2H3"}
    assert "order: L0H1, L2H3.</p>" in (out / "index.html").read_text()
    (earlier / "run" / "index.html").unlink()
    assert cli("report", earlier / "run") == 0
    assert (earlier / "run" / "index.html").exists()


def test_tasks_and_help(capsys, tmp_path):
    assert cli("tasks", "build", "--out", tmp_path, "-n", 8) == 0  # arguments go to the builder
    assert (
        len(list(tmp_path.glob("*.jsonl"))) == 5
    )  # the four Cognitive Mirrors figure tasks + retrieval_keyed
    assert cli("tasks", "show", TASK, "-n", 1) == 0
    out = capsys.readouterr().out
    assert "tiny_echo: 16 examples" in out and out.count('"id"') == 1
    assert cli("tasks", "list") == 0
    for cmd in ("tasks", "attribute", "ablate", "run", "report"):
        assert cli(cmd, "--help") == 0
        assert "usage: interp-heads" in capsys.readouterr().out


def _bad_config(tmp_path, text):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    return path


BAD = {
    "malformed task": lambda t: [
        "ablate",
        "--no-filter",
        "--model",
        "tiny",
        "--task",
        t / "bad.jsonl",
        "--heads",
        "L0H0",
    ],
    "unknown task": lambda t: [
        "ablate",
        "--no-filter",
        "--model",
        "tiny",
        "--task",
        "no_such_task_xyz",
        "--heads",
        "L0H0",
    ],
    "unknown model": lambda t: [
        "ablate",
        "--no-filter",
        "--model",
        "no-such-model-xyz",
        "--task",
        TASK,
        "--heads",
        "L0H0",
    ],
    "k <= 0": lambda t: [
        "ablate",
        "--no-filter",
        "--model",
        "tiny",
        "--task",
        TASK,
        "--ranking",
        t / "ranking.csv",
        "--k",
        "0,2",
    ],
    "k > heads": lambda t: [
        "ablate",
        "--no-filter",
        "--model",
        "tiny",
        "--task",
        TASK,
        "--ranking",
        t / "ranking.csv",
        "--k",
        "13",
    ],
    "bad head": lambda t: [
        "ablate",
        "--no-filter",
        "--model",
        "tiny",
        "--task",
        TASK,
        "--heads",
        "L99H1",
    ],
    "bad head label": lambda t: [
        "ablate",
        "--no-filter",
        "--model",
        "tiny",
        "--task",
        TASK,
        "--heads",
        "layer3",
    ],
    "empty after filtering": lambda t: [
        "run",
        "--config",
        _bad_config(t, CONFIG_TEXT.replace("filter_correct = false", "filter_correct = true")),
        "--force",
    ],
    "malformed config": lambda t: ["run", "--config", _bad_config(t, "ks = [1,\n")],
    "unknown config key": lambda t: [
        "run",
        "--config",
        _bad_config(t, 'model = "tiny"\ncolour = "red"\n'),
    ],
    "k > heads in config": lambda t: [
        "run",
        "--config",
        _bad_config(t, CONFIG_TEXT.replace("ks = [2, 4, 8]", "ks = [2, 400]")),
    ],
    "different config": lambda t: [
        "run",
        "--config",
        _bad_config(t, CONFIG_TEXT.replace("seeds = 2", "seeds = 3")),
    ],
}
EXPECT = {
    "malformed task": "bad.jsonl",
    "unknown task": "no_such_task_xyz",
    "unknown model": "no-such-model-xyz",
    "k <= 0": "k=0",
    "k > heads": "k=13",
    "bad head": "L99H1",
    "bad head label": "layer3",
    "empty after filtering": "left after filtering",
    "malformed config": "malformed config",
    "unknown config key": "colour",
    "k > heads in config": "k=400",
    "different config": "different config",
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_one_line_exit_2_no_damage(case, earlier, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(earlier / "run", run)
    pd.read_csv(earlier / "attr" / "ranking.csv").to_csv(tmp_path / "ranking.csv", index=False)
    (tmp_path / "bad.jsonl").write_text('{"id": "a", "prompt": "x"\nnot json\n')
    before = snapshot(run)
    capsys.readouterr()
    assert cli(*BAD[case](tmp_path), "--out", run) == 2
    err = (
        capsys.readouterr().err.split("\r")[-1].strip()
    )  # what a terminal shows once bars are cleared
    assert err.startswith("interp-heads: error:") and "\n" not in err, err
    assert EXPECT[case] in err, err
    assert snapshot(run) == before


def test_unwritable_output_and_force(earlier, tmp_path, capsys):
    config = _bad_config(tmp_path, CONFIG_TEXT)
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert cli("run", "--config", config, "--out", blocker / "sub") == 2
    assert "not writable" in capsys.readouterr().err
    assert cli("run", "--config", config, "--out", blocker) == 2
    assert "not a directory" in capsys.readouterr().err
    assert blocker.read_text() == "not a folder"
    assert cli("report", tmp_path) == 2
    assert "not a run folder" in capsys.readouterr().err


def test_cli_flags_come_from_the_config_definitions():
    """Defaults, choices and types of the flags that mirror config keys are the config's own."""
    from interp_heads.attribution.methods import METHODS
    from interp_heads.choices import PromptFormat
    from interp_heads.cli import build_parser
    from interp_heads.config.run_config import RunConfig
    from interp_heads.interventions.kinds import KINDS

    sub = build_parser()._subparsers._group_actions[0].choices
    flags = {a.dest: a for a in sub["attribute"]._actions}
    # registered extension points: any registered name, checked by the registry itself
    assert flags["attribution"].option_strings == ["--method"]
    assert flags["attribution"].type.registry is METHODS and flags["attribution"].choices is None
    assert flags["ablation"].type.registry is KINDS
    assert flags["fmt"].choices == list(PromptFormat.values())
    assert flags["n_rank"].default == RunConfig.model_fields["n_rank"].default
    ablate = {a.dest: a for a in sub["ablate"]._actions}
    for dest in ("seeds", "n_eval", "max_new_tokens", "batch_size", "selections"):
        want = RunConfig.model_fields[dest].get_default(call_default_factory=True)
        assert ablate[dest].default == want, dest  # one set of defaults: the config's
    assert "method" not in ablate  # the deprecated alias of --ablation is gone


def test_ablate_random_control_only_and_exclude_top(earlier, tmp_path):
    """A sweep without TopK has no significance rows; the report must still build."""
    out = tmp_path / "random_only"
    args = ["ablate", "--model", "tiny", "--task", TASK, "--ranking", earlier / "run"]
    args += ["--selections", "randomk", "--exclude-top", "--k", 2, "--seeds", 2, "--no-filter"]
    args += ["--metrics", "accuracy", "--n-eval", 3, "--max-new-tokens", 2, "--out", out]
    assert cli(*args, "--quiet") == 0
    gens = pd.read_json(out / "generations.jsonl", lines=True)
    top2 = set(pd.read_csv(earlier / "run" / "ranking.csv").sort_values("rank").label[:2])
    drawn = {h for hs in gens.query("selection == 'RandomK'").heads for h in hs.split(",")}
    assert drawn and not drawn & top2  # --exclude-top: never a TopK head of the same k
    assert (out / "index.html").exists()


def test_ablate_takes_the_seed_protocol_settings(earlier, tmp_path):
    """--reference unmasked and --free-form reach the sweep (Cognitive Mirrors' protocol)."""
    out = tmp_path / "seed_protocol"
    args = ["ablate", "--model", "tiny", "--task", TASK, "--ranking", earlier / "run", "--k", 2]
    args += ["--seeds", 1, "--no-filter", "--metrics", "accuracy,chrf", "--n-eval", 3]
    args += ["--max-new-tokens", 3, "--reference", "unmasked", "--free-form"]
    assert cli(*args, "--out", out, "--quiet") == 0
    sweep = json.loads((out / "conditions" / "config.json").read_text())["config"]
    assert sweep["reference"] == "unmasked" and sweep["free_form"]
    assert (out / "unmasked").is_dir()  # the unmasked answers, chrF's reference
    rec = pd.read_parquet(out / "sweep.parquet")
    base = rec[(rec.selection == "baseline") & (rec.metric == "chrf")]
    assert (base.value == 1.0).all()  # the unmasked condition scored against itself


def test_ablate_elbow_masks_the_rankings_elbow_k(earlier, tmp_path, capsys):
    """--elbow adds the elbow of the stored scores to --k (as a run config's elbow = true)."""
    from interp_heads.attribution import HeadScores
    from interp_heads.sweep.elbow import elbow_index

    scores = HeadScores.load(earlier / "attr" / "attribution.parquet")
    imp = scores.importance()
    expect = max(1, elbow_index([float(imp[h]) for h in scores.top(imp.numel())]))
    out = tmp_path / "elbow"
    args = ["ablate", "--model", "tiny", "--task", TASK, "--ranking", earlier / "attr", "--k", 1]
    args += ["--seeds", 1, "--no-filter", "--metrics", "accuracy", "--n-eval", 2, "--elbow"]
    assert cli(*args, "--max-new-tokens", 2, "--out", out, "--quiet") == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["elbow_k"] == {scores.task: expect}
    ks = set(pd.read_parquet(out / "sweep.parquet").query("selection == 'TopK'").k)
    assert ks == {1, expect} if expect != 1 else ks == {1}
    # a ranking without its scores, and explicit heads: one line each, exit 2
    csv_only = tmp_path / "ranking.csv"
    shutil.copy(earlier / "attr" / "ranking.csv", csv_only)
    for bad, needle in ((["--ranking", csv_only], "needs the ranking's scores"),
                        (["--heads", "L0H1"], "not --heads")):  # fmt: skip
        argv = ["ablate", "--model", "tiny", "--task", TASK, *bad, "--elbow", "--no-filter"]
        capsys.readouterr()
        assert cli(*argv, "--out", tmp_path / "no", "--quiet") == 2
        assert needle in capsys.readouterr().err
