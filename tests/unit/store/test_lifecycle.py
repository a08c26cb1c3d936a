"""A command's life around its run folder: start-up, failures, and ``--force`` reruns killed anywhere.

* ``import interp_heads`` loads no torch, so Ctrl-C while the command starts (SIGINT sent while
  torch's libraries load, in a subprocess) ends with one line and exit 130.
* A folder the command created and left holding nothing needed goes when it fails; a folder with
  a finished step, or one that existed before, stays.
* A ``--force`` rerun with another config, SIGKILLed at points from its first manifest write to
  its report: ``report DIR`` then shows no table of the earlier config under the new provenance
  (checked by the tables' modification times against the rerun's start) and the folder holds no
  earlier page; refused by its first step, the rerun leaves the earlier run byte-identical.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import interp_heads
from interp_heads.store import LOCK_NAME, faults, temp_pid
from tests.helpers import ROOT, cli, snapshot

DATA = ROOT / "tests" / "data"
TASK = DATA / "tiny_echo.jsonl"
CONFIG = (DATA / "tiny.toml").read_text().replace("tests/data/", f"{DATA}/")
OTHER = CONFIG.replace("ks = [2, 4, 8]", "ks = [2]").replace("seeds = 2", "seeds = 3")
ENV = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
CONSOLE_SCRIPT = "import sys; from interp_heads.cli import main; sys.exit(main())"


def _config(tmp: Path, text: str = CONFIG, name: str = "c.toml") -> Path:
    (tmp / name).write_text(text)
    return tmp / name


def _snapshot(folder: Path) -> dict:
    """Every file's sha256, but the lock and temporary files a SIGKILL leaves behind."""
    return snapshot(folder, skip=lambda p: temp_pid(p.name) is not None or p.name == LOCK_NAME)


# --------------------------------------------------------------------------- start-up
def test_import_loads_no_torch_and_every_public_name_resolves():
    code = (
        "import sys, interp_heads, interp_heads.cli\n"
        "heavy = [m for m in ('torch', 'pandas', 'transformer_lens') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "from interp_heads import *\n"
        "from interp_heads import HeadScores, run_sweep, load_task, plot_sweep, __version__\n"
        "assert all(callable(getattr(interp_heads, n)) for n in interp_heads.__all__)\n"
        "from interp_heads.cli import build_parser, load_ranking, ranking_provenance, PipelineError\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        interp_heads.nope  # noqa: B018


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc")
def test_ctrl_c_while_torch_loads_is_one_line_and_exit_130(tmp_path):
    argv = ["attribute", "--model", "tiny", "--task", TASK, "--no-filter", "--n-examples", 2]
    argv += ["--out", tmp_path / "R", "--quiet"]
    proc = subprocess.Popen(
        [sys.executable, "-c", CONSOLE_SCRIPT, *map(str, argv)],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    maps, deadline, loading = Path(f"/proc/{proc.pid}/maps"), time.monotonic() + 120, False
    while not loading and time.monotonic() < deadline and proc.poll() is None:
        try:
            loading = "/torch/" in maps.read_text()  # torch's shared libraries are being mapped
        except OSError:
            pass
        time.sleep(0.001)
    assert loading, "torch never started loading"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err and err.strip().count("\n") == 0, err
    assert "interrupted" in err and not (tmp_path / "R").exists()


# --------------------------------------------------------------------------- folders made for nothing
NOTHING_LEFT = CONFIG.replace("filter_correct = false", "filter_correct = true")  # tiny: 0 correct


def test_a_failed_run_removes_the_folders_it_created(tmp_path, capfd):
    out = tmp_path / "a" / "b" / "run"
    assert cli("run", "--config", _config(tmp_path, NOTHING_LEFT), "--out", out, "--quiet") == 2
    assert "left after filtering" in capfd.readouterr().err
    assert not (tmp_path / "a").exists()


def test_a_folder_that_existed_is_never_removed(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    assert cli("run", "--config", _config(tmp_path, NOTHING_LEFT), "--out", out, "--quiet") == 2
    assert out.is_dir()
    user = tmp_path / "user"
    user.mkdir()
    (user / "notes.txt").write_text("mine")
    argv = ("run", "--config", _config(tmp_path, NOTHING_LEFT), "--out", user, "--force")
    assert cli(*argv, "--quiet") == 2
    assert (user / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize(("point", "stays"), [("step:baseline", False), ("step:attribute", True)])
def test_an_interrupted_run_keeps_its_folder_only_with_a_finished_step(
    point, stays, tmp_path, monkeypatch, capfd
):
    def interrupt(name):
        if name == point:
            raise KeyboardInterrupt

    monkeypatch.setattr(faults, "point", interrupt)
    out = tmp_path / "new" / "run"
    assert cli("run", "--config", _config(tmp_path), "--out", out, "--quiet") == 130
    assert "rerun the same command to resume" in capfd.readouterr().err
    assert out.exists() is stays and (tmp_path / "new").exists() is stays
    if stays:  # resume needs what the finished step stored
        assert (out / "baseline.csv").exists()
        assert json.loads((out / "manifest.json").read_text())["steps"] == ["baseline"]


def test_a_run_that_fails_after_a_step_says_failed_and_the_same_command_resumes(
    tmp_path, monkeypatch, capfd
):
    from interp_heads.testing.tiny import assert_matches_golden

    def bug(name):
        if name == "step:sweep":
            raise RuntimeError("planted")

    monkeypatch.setattr(faults, "point", bug)
    out, argv = tmp_path / "run", ("run", "--config", _config(tmp_path), "--quiet")
    assert cli(*argv, "--out", out) == 1
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "failed" and manifest["error"] == "RuntimeError: planted"
    assert manifest["steps"] == ["baseline", "attribute", "known"]
    assert cli("report", out) == 0
    assert "stopped by an error: RuntimeError: planted" in (out / "index.html").read_text()
    monkeypatch.setattr(faults, "point", lambda name: None)
    capfd.readouterr()
    assert cli(*argv, "--out", out) == 0, capfd.readouterr().err  # no --force needed
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and "error" not in manifest
    assert_matches_golden(out, DATA / "golden" / "tiny")


def test_an_ablate_that_fails_in_its_first_step_removes_its_new_folder(
    tmp_path, monkeypatch, capfd
):
    def bug(name):
        if name == "step:sweep":
            raise RuntimeError("planted")

    monkeypatch.setattr(faults, "point", bug)
    out = tmp_path / "A"
    argv = ["ablate", "--model", "tiny", "--task", TASK, "--heads", "L0H0", "--no-filter"]
    assert cli(*argv, "--metrics", "accuracy", "--out", out, "--quiet") == 1
    assert "internal error: RuntimeError: planted" in capfd.readouterr().err
    assert not out.exists()


# --------------------------------------------------------------------------- --force reruns
@pytest.fixture(scope="module")
def earlier(tmp_path_factory):
    """A finished run of CONFIG and the digest OTHER will record."""
    from interp_heads.config.run_config import RunConfig

    root = tmp_path_factory.mktemp("earlier")
    assert cli("run", "--config", _config(root), "--out", root / "run", "--quiet") == 0
    return root / "run", RunConfig.from_toml(_config(root, OTHER, "o.toml")).digest()


KILL_POINTS = [
    "write:*/manifest.json#1",  # the started manifest, before its rename
    "step:baseline",  # the started manifest is in place, the earlier page moved aside
    "write:*/baseline.csv",  # inside the first step
    "write:*/manifest.json#2",  # baseline done, earlier outputs retired, manifest not yet renamed
    "step:attribute",  # baseline finished, the earlier config's outputs retired
    "write:*/sweep.parquet",  # tables
    "write:figures/*",  # report
]


@pytest.mark.parametrize("point", KILL_POINTS)
def test_a_killed_force_rerun_never_shows_the_earlier_config(point, earlier, tmp_path):
    finished, digest = earlier
    out = tmp_path / "run"
    shutil.copytree(finished, out)
    before = _snapshot(out)
    t0 = time.time_ns()
    cmd = [sys.executable, "-m", "interp_heads.cli", "run", "--config", _config(tmp_path, OTHER)]
    cmd += ["--out", out, "--quiet", "--force"]
    killed = subprocess.run(
        list(map(str, cmd)), env={**ENV, "INTERP_HEADS_KILL_AT": point}, capture_output=True
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()[-2000:]
    manifest = json.loads((out / "manifest.json").read_text())
    if point == KILL_POINTS[0]:  # killed inside the first write: the earlier run, untouched
        assert manifest["config_digest"] != digest and _snapshot(out) == before
        return
    assert manifest["config_digest"] == digest, "the folder still claims the earlier run"
    page = out / "index.html"
    assert not page.exists() or page.stat().st_mtime_ns >= t0, "the earlier page is still there"
    assert cli("report", out) == 0
    html = page.read_text()
    shown = {
        "summary.parquet": "Cognitive Mirrors figure" in html,
        "baseline.csv": "Baseline (unmasked model)" in html,
        "attribution.parquet": "Head attribution per task" in html,
    }
    for table, on_page in shown.items():
        if on_page:  # only a table this rerun wrote may be on its page
            assert (out / table).stat().st_mtime_ns >= t0, f"{table} of the earlier config shown"
    if shown["summary.parquet"]:
        import pandas as pd

        assert set(pd.read_parquet(out / "summary.parquet").k) <= {0, 2}
    assert f"config digest {digest}" in html


def test_a_force_rerun_refused_by_its_first_step_leaves_the_earlier_run(earlier, tmp_path):
    finished, _ = earlier
    out = tmp_path / "run"
    shutil.copytree(finished, out)
    before = _snapshot(out)
    argv = ("run", "--config", _config(tmp_path, NOTHING_LEFT), "--out", out, "--force")
    assert cli(*argv, "--quiet") == 2
    assert _snapshot(out) == before


@pytest.mark.parametrize(
    "setting",
    ["exact_layers = 4", "exact_layers = 99", "lookahead = 99", "rivals = 259", "refine = 13"],
)
def test_a_force_rerun_with_a_setting_out_of_the_models_range_leaves_the_earlier_run(
    earlier, tmp_path, setting
):
    """Settings whose range depends on the model (3 layers x 4 heads, 259 = the vocabulary's
    size here) are checked once the model is loaded and before any step: nothing is retired."""
    finished, _ = earlier
    out = tmp_path / "run"
    shutil.copytree(finished, out)
    before = _snapshot(out)
    text = CONFIG.replace('attribution = "atp"', f'attribution = "ablation_atp"\n{setting}')
    argv = ("run", "--config", _config(tmp_path, text), "--out", out, "--force")
    assert cli(*argv, "--quiet") == 2
    assert _snapshot(out) == before
