"""Hardening on the tiny model: stale results under --force, bad input, damaged resume state, the lock.

Each test names the failure it guards against, grouped by kind (wrong results, bad input, damaged
state, bad values, Ctrl-C and two writers, threads, what the command line says).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pandas as pd
import pytest

from interp_heads.store import LOCK_NAME, StoreWarning
from tests.helpers import DATA, cli, snapshot

ROOT = DATA.parents[1]
TASK = str(DATA / "tiny_echo.jsonl")
CONFIG_TEXT = (DATA / "tiny.toml").read_text().replace("tests/data/", f"{DATA}/")
ABLATE = [
    "ablate",
    "--model",
    "tiny",
    "--task",
    TASK,
    "--seeds",
    1,
    "--metrics",
    "accuracy",
    "--n-eval",
    4,
    "--max-new-tokens",
    3,
    "--quiet",
    "--no-filter",
]  # the random tiny model answers nothing correctly


def _config(folder: Path, text: str = CONFIG_TEXT, name: str = "c.toml") -> Path:
    path = folder / name
    path.write_text(text)
    return path


def _records(folder: Path) -> pd.DataFrame:
    key = ["task", "selection", "k", "seed", "example_id", "metric"]
    return pd.read_parquet(folder / "sweep.parquet").sort_values(key).reset_index(drop=True)


def _gens(folder: Path) -> pd.DataFrame:
    key = ["task", "selection", "k", "seed", "example_id"]
    return (
        pd.read_json(folder / "generations.jsonl", lines=True, dtype={"example_id": str})
        .sort_values(key)
        .reset_index(drop=True)
    )


def _err(capsys) -> str:
    return capsys.readouterr().err.split("\r")[-1].strip()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A finished ``run`` (tiny.toml, atp) and an ``ablate --heads L0H0,L0H1`` folder."""
    root = tmp_path_factory.mktemp("hard")
    assert cli("run", "--config", _config(root), "--out", root / "run", "--quiet") == 0
    assert cli(*ABLATE, "--heads", "L0H0,L0H1", "--out", root / "abl") == 0
    return root


# --------------------------------------------------------------------------- wrong results
def test_ablate_force_with_other_heads_recomputes(runs, tmp_path):
    out, fresh = tmp_path / "abl", tmp_path / "fresh"
    shutil.copytree(runs / "abl", out)
    assert cli(*ABLATE, "--heads", "L1H2,L1H3", "--force", "--out", out) == 0
    assert cli(*ABLATE, "--heads", "L1H2,L1H3", "--out", fresh) == 0
    gens = _gens(out)
    assert set(gens.query("selection == 'TopK'").heads) == {"L1H2,L1H3"}
    masked = json.loads((out / "conditions" / "tiny_echo__TopK__k2__s0.json").read_text())
    assert masked["heads"] == ["L1H2", "L1H3"]
    pd.testing.assert_frame_equal(_records(out), _records(fresh))
    pd.testing.assert_frame_equal(gens, _gens(fresh))


def test_run_force_after_method_change_matches_a_fresh_run(runs, tmp_path):
    out, fresh = tmp_path / "run", tmp_path / "fresh"
    shutil.copytree(runs / "run", out)
    other = _config(
        tmp_path, CONFIG_TEXT.replace('attribution = "atp"', 'attribution = "gradxact"')
    )
    random = out / "conditions" / "tiny_echo__RandomK__k4__s1.json"
    kept = random.read_bytes()
    assert cli("run", "--config", other, "--out", out, "--force", "--quiet") == 0
    assert (
        random.read_bytes() == kept
    )  # --force overwrites only what differs: RandomK ignores the ranking
    assert cli("run", "--config", other, "--out", fresh, "--quiet") == 0
    ranking = pd.read_csv(out / "ranking.csv")
    assert set(ranking.method) == {"gradxact"}
    pd.testing.assert_frame_equal(ranking, pd.read_csv(fresh / "ranking.csv"))
    pd.testing.assert_frame_equal(_records(out), _records(fresh))
    pd.testing.assert_frame_equal(_gens(out), _gens(fresh))
    top = _gens(out).query("selection == 'TopK' and k == 2").heads.iloc[0]
    assert top == ",".join(ranking.label[:2])
    assert top != _gens(runs / "run").query("selection == 'TopK' and k == 2").heads.iloc[0]


def test_model_fingerprint_follows_the_weights():
    import gc

    import torch

    from interp_heads.store.resume import model_fingerprint
    from interp_heads.testing.tiny import tiny_model

    first = model_fingerprint(tiny_model(seed=0))  # the model is freed: its id() may be recycled
    gc.collect()
    assert model_fingerprint(tiny_model(seed=1)) != first
    model = tiny_model(seed=0)
    assert model_fingerprint(model) == first
    with torch.no_grad():
        model.blocks[0].attn.W_O[0, 0, 0] += 1.0  # an in-place edit of the weights
    assert model_fingerprint(model) != first


def test_conditions_of_another_model_are_not_reused(tmp_path):
    from interp_heads.metrics import Accuracy
    from interp_heads.sweep.loop import SweepConfig, run_sweep
    from interp_heads.tasks import load_task
    from interp_heads.testing.tiny import tiny_model

    task, ranking = load_task(TASK).subset(n=3), [(0, 0), (1, 1)]
    cfg = SweepConfig(ks=[2], selections=["topk"], seeds=1, max_new_tokens=3)
    kw = dict(metrics=[Accuracy()], out_dir=tmp_path, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_sweep(tiny_model(seed=0), [task], {task.name: ranking}, cfg, **kw)
        before = snapshot(tmp_path)
        run_sweep(tiny_model(seed=0), [task], {task.name: ranking}, cfg, **kw)
        assert snapshot(tmp_path) == before  # same inputs: everything reused
        other = tiny_model(seed=1)
        res = run_sweep(other, [task], {task.name: ranking}, cfg, **kw)
        ref = run_sweep(
            other, [task], {task.name: ranking}, cfg, metrics=[Accuracy()], progress=False
        )
    assert snapshot(tmp_path) != before
    assert res.generations.generation.tolist() == ref.generations.generation.tolist()


# --------------------------------------------------------------------------- bad input destroys nothing
def test_bad_selection_with_force_leaves_the_folder_intact(runs, tmp_path, capsys):
    out = tmp_path / "abl"
    shutil.copytree(runs / "abl", out)
    before = snapshot(out)
    assert (
        cli(*ABLATE, "--heads", "L0H0,L0H1", "--selections", "topk,bogus", "--force", "--out", out)
        == 2
    )
    assert "bogus" in _err(capsys)
    assert snapshot(out) == before


@pytest.mark.parametrize("flag", ["--max-new-tokens", "--batch-size"])
def test_zero_count_writes_nothing_and_the_corrected_command_runs(flag, tmp_path, capsys):
    out = tmp_path / "new"
    assert cli(*ABLATE, "--heads", "L0H0", flag, 0, "--out", out) == 2
    assert "must be > 0" in _err(capsys)
    assert not out.exists()
    assert cli(*ABLATE, "--heads", "L0H0", "--out", out) == 0


# --------------------------------------------------------------------------- damaged resume state
def _cut_in_utf8(p: Path) -> None:
    text = p.read_text()
    p.write_bytes((text[:-20] + "é").encode()[:-1])


DAMAGE = {
    "truncated attribution": (
        "attribution/tiny_echo.json",
        lambda p: p.write_bytes(p.read_bytes()[:200]),
    ),
    "truncated conditions/config.json": (
        "conditions/config.json",
        lambda p: p.write_bytes(p.read_bytes()[:30]),
    ),
    "condition cut in a UTF-8 character": ("conditions/tiny_echo__TopK__k2__s0.json", _cut_in_utf8),
    "condition with invalid UTF-8": (
        "conditions/tiny_echo__RandomK__k4__s1.json",
        lambda p: p.write_bytes(p.read_bytes().replace(b'"heads"', b'"\xff\xfe"', 1)),
    ),
    "condition holding [1,2]": (
        "conditions/tiny_echo__baseline__k0__s0.json",
        lambda p: p.write_text("[1,2]"),
    ),
    "condition missing keys": (
        "conditions/tiny_echo__TopK__k4__s0.json",
        lambda p: p.write_text(json.dumps({"task": "tiny_echo", "k": 4})),
    ),
    "condition edited": (
        "conditions/tiny_echo__TopK__k8__s0.json",
        lambda p: p.write_text(p.read_text().replace('"generations": ["', '"generations": ["X', 1)),
    ),
    "manifest truncated": ("manifest.json", lambda p: p.write_bytes(p.read_bytes()[:50])),
}


@pytest.mark.parametrize("case", list(DAMAGE))
def test_damaged_entry_is_named_dropped_and_recomputed(case, runs, tmp_path, capsys):
    out = tmp_path / "run"
    shutil.copytree(runs / "run", out)
    name, damage = DAMAGE[case]
    damage(out / name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert (
            cli(
                "run", "--config", _config(tmp_path), "--out", out, "--quiet", ignore_warnings=False
            )
            == 0
        )
    store = [str(w.message) for w in caught if issubclass(w.category, StoreWarning)]
    if name != "manifest.json":  # a damaged manifest is rewritten; the keys guard every result
        assert any(str(out / name) in m for m in store), store
    pd.testing.assert_frame_equal(_records(out), _records(runs / "run"))
    pd.testing.assert_frame_equal(_gens(out), _gens(runs / "run"))
    pd.testing.assert_frame_equal(
        pd.read_csv(out / "ranking.csv"), pd.read_csv(runs / "run" / "ranking.csv")
    )
    if name != "manifest.json":
        assert _content(out / name) == _content(runs / "run" / name)


def _content(path: Path) -> dict:
    """An entry without what changes from run to run (timings, date, checksum)."""
    d = json.loads(path.read_text())
    for key in ("seconds", "_sha256"):
        d.pop(key, None)
    for key in ("seconds", "date"):
        d.get("provenance", {}).pop(key, None)
    (d.get("provenance", {}).get("verification") or {}).pop("seconds", None)
    # per-example sums are reduced in another order from run to run (~1e-7); the ranking is not
    (d.get("provenance", {}).get("split_half") or {}).pop("scores", None)
    return d


def test_entries_of_an_older_version_warn_once_per_folder(tmp_path):
    from interp_heads.store import read_entry

    for i in range(3):
        (tmp_path / f"{i}.json").write_text(
            json.dumps({"k": i})
        )  # valid then, but no resume key or checksum
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert all(
            read_entry(tmp_path / f"{i}.json", {"k": int, "resume_key": str}) is None
            for i in range(3)
        )
    assert [str(w.message).split(":")[0] for w in caught] == [str(tmp_path)]


def test_damaged_baseline_cache_is_ignored(tmp_path):
    from interp_heads.pipeline.baseline_step import _verified_baseline
    from interp_heads.store.folder import RunFolder
    from interp_heads.tasks import load_task

    task, folder = load_task(TASK), RunFolder(tmp_path)
    folder.write_baseline("b", {"key": "k", "row": {}, "ok": ["t0", "nope"]})
    with pytest.warns(StoreWarning, match="b.json: names examples"):
        assert _verified_baseline(folder, "b", task) == {}
    folder.baseline_entry("b").write_text('{"key": "k", "row"')
    with pytest.warns(StoreWarning, match="b.json: truncated"):
        assert _verified_baseline(folder, "b", task) == {}
    folder.write_baseline("b", {"key": "k", "row": {}, "ok": ["t0"]})
    assert _verified_baseline(folder, "b", task)["ok"] == ["t0"]


def test_headscores_save_is_atomic_and_load_names_the_file(tmp_path):
    import torch

    from interp_heads.attribution import HeadScores

    s = HeadScores(torch.randn(3, 4), "atp", "t")
    for ext in ("json", "parquet"):
        path = s.save(tmp_path / f"s.{ext}")
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
        assert torch.equal(HeadScores.load(path).scores, s.scores)
        path.write_bytes(path.read_bytes()[:40])
        with pytest.raises(ValueError, match=f"s.{ext}"):
            HeadScores.load(path)


# --------------------------------------------------------------------------- bad values refused
def _long_task(tmp_path: Path) -> Path:
    rows = [json.loads(line) for line in Path(TASK).read_text().splitlines()]
    rows[2]["prompt"] = "word " * 100  # 500 bytes: the tiny model's context is 128 tokens
    path = tmp_path / "long.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def _short_ranking(tmp_path: Path) -> Path:
    path = tmp_path / "short.csv"
    pd.DataFrame(
        {"rank": [1, 2, 3, 4, 5], "label": ["L0H0", "L0H1", "L1H0", "L1H1", "L2H0"]}
    ).to_csv(path, index=False)
    return path


REFUSED = {
    "prompt longer than the context (ablate)": (
        lambda t: [
            "ablate",
            "--model",
            "tiny",
            "--task",
            _long_task(t),
            "--heads",
            "L0H0",
            "--n-eval",
            4,
            "--no-filter",
        ],
        "row 't2'",
    ),
    "prompt longer than the context (attribute)": (
        lambda t: ["attribute", "--model", "tiny", "--task", _long_task(t), "--no-filter"],
        "exceeds the model context of 128",
    ),
    "prompt longer than the context (run)": (
        lambda t: [
            "run",
            "--config",
            _config(t, CONFIG_TEXT.replace(str(DATA / "tiny_echo.jsonl"), str(_long_task(t)))),
        ],
        "row 't2'",
    ),
    "--n-eval -5": (
        lambda t: [*ABLATE, "--heads", "L0H0", "--n-eval", -5],
        "--n-eval: must be > 0",
    ),
    "--seeds 0": (lambda t: [*ABLATE, "--heads", "L0H0", "--seeds", 0], "--seeds: must be > 0"),
    "--seeds -1": (lambda t: [*ABLATE, "--heads", "L0H0", "--seeds", -1], "--seeds: must be > 0"),
    "--skip -3": (lambda t: [*ABLATE, "--heads", "L0H0", "--skip", -3], "--skip: must be >= 0"),
    "--k ,": (
        lambda t: [*ABLATE, "--heads", "L0H0", "--k", ","],
        "--k: expected comma-separated",
    ),
    "duplicate heads": (lambda t: [*ABLATE, "--heads", "L0H1,L0H1"], "L0H1 2 times"),
    "k beyond the ranking": (
        lambda t: [*ABLATE, "--ranking", _short_ranking(t), "--k", 8],
        "k=8 exceeds the 5 heads",
    ),
    "--threads 0": (
        lambda t: [*ABLATE, "--heads", "L0H0", "--threads", 0],
        "--threads: must be > 0",
    ),
    "seeds = 0 in a config": (
        lambda t: ["run", "--config", _config(t, CONFIG_TEXT.replace("seeds = 2", "seeds = 0"))],
        "seeds = 0: must be greater than 0",
    ),
    "--device tpu": (
        lambda t: [*ABLATE, "--heads", "L0H0", "--device", "tpu"],
        "unknown device 'tpu'",
    ),
    "device = tpu in a config": (
        lambda t: ["run", "--config", _config(t, CONFIG_TEXT + 'device = "tpu"\n')],
        "unknown device 'tpu'",
    ),
    "truncated ranking.csv": (
        lambda t: [*ABLATE, "--ranking", _truncated_ranking(t)],
        "truncated",
    ),
    "ranking.csv of binary junk": (
        lambda t: [*ABLATE, "--ranking", _junk(t, "ranking.csv")],
        "ranking",
    ),
    "unreadable attribution.parquet": (
        lambda t: [*ABLATE, "--ranking", _junk(t, "attribution.parquet")],
        "attribution.parquet",
    ),
}


def _truncated_ranking(tmp_path: Path) -> Path:
    path = tmp_path / "trunc.csv"
    path.write_text(
        "task,rank,label,layer,head,score,method\ntiny_echo,1,L2H3,2,3,0.5,atp\ntiny_echo,2,"
    )
    return path


def _junk(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    path.write_bytes(bytes(range(256)) * 4)
    return path


@pytest.mark.parametrize("case", list(REFUSED))
def test_bad_value_is_one_line_exit_2_no_damage(case, runs, tmp_path, capsys):
    out = tmp_path / "run"
    shutil.copytree(runs / "run", out)
    before = snapshot(out)
    argv, expect = REFUSED[case]
    capsys.readouterr()
    assert cli(*argv(tmp_path), "--out", out) == 2
    err = _err(capsys)
    assert err.startswith("interp-heads: error:") and "\n" not in err and "Traceback" not in err, (
        err
    )
    assert expect in err, err
    assert snapshot(out) == before


def test_cuda_without_cuda_is_one_line(tmp_path, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    assert cli(*ABLATE, "--heads", "L0H0", "--device", "cuda", "--out", tmp_path / "x") == 2
    assert "CUDA is not available" in _err(capsys)
    assert not (tmp_path / "x").exists()


# --------------------------------------------------------------------------- Ctrl-C and two writers
def _start_run(config: Path, out: Path) -> subprocess.Popen:
    cmd = [
        sys.executable,
        "-m",
        "interp_heads.cli",
        "run",
        "--config",
        str(config),
        "--out",
        str(out),
        "--quiet",
    ]
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _wait_for_conditions(proc, out: Path, n: int = 2) -> None:
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if len(list((out / "conditions").glob("tiny_echo__*.json"))) >= n:
            return
        time.sleep(0.01)
    assert proc.poll() is None, "the run finished before the test could act"


def test_second_writer_refused_then_ctrl_c_says_rerun(tmp_path, capsys):
    out = tmp_path / "run"
    config = _config(
        tmp_path, CONFIG_TEXT.replace("ks = [2, 4, 8]", "ks = [1, 2, 3, 4, 5, 6, 7, 8]")
    )
    proc = _start_run(config, out)
    try:
        _wait_for_conditions(proc, out)
        lock = json.loads((out / LOCK_NAME).read_text())
        assert lock["pid"] == proc.pid
        other = _config(
            tmp_path,
            CONFIG_TEXT.replace('attribution = "atp"', 'attribution = "gradxact"'),
            "o.toml",
        )
        assert cli("run", "--config", other, "--out", out, "--force", "--quiet") == 2
        assert _err(capsys).startswith(
            f"interp-heads: error: run folder {str(out)!r} in use by pid {proc.pid} (if no "
        )
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130
    assert err.strip() == "interp-heads: interrupted; rerun the same command to resume"
    assert not (out / LOCK_NAME).exists()
    assert json.loads((out / "manifest.json").read_text())["config"]["attribution"] == "atp"


def test_stale_lock_of_a_dead_pid_is_taken_over(runs, tmp_path):
    out = tmp_path / "run"
    shutil.copytree(runs / "run", out)
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    (out / LOCK_NAME).write_text(json.dumps({"pid": int(dead.stdout), "host": os.uname().nodename}))
    with pytest.warns(StoreWarning, match="stale lock of pid"):
        assert cli("report", out, ignore_warnings=False) == 0
    assert not (out / LOCK_NAME).exists()


def test_lock_of_a_live_process_is_refused(runs, tmp_path, capsys):
    out = tmp_path / "run"
    shutil.copytree(runs / "run", out)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (out / LOCK_NAME).write_text(json.dumps({"pid": sleeper.pid, "host": os.uname().nodename}))
        before = snapshot(out)
        assert cli("run", "--config", _config(tmp_path), "--out", out, "--quiet") == 2
        assert f"in use by pid {sleeper.pid}" in _err(capsys)
        assert snapshot(out) == before
    finally:
        sleeper.kill()
        sleeper.wait()


# --------------------------------------------------------------------------- threads
def test_threads_flag_and_fair_share(tmp_path, monkeypatch):
    import torch

    from interp_heads.models import threads

    before = torch.get_num_threads()
    try:
        assert threads.configure(1) == 1 and torch.get_num_threads() == 1
        monkeypatch.setattr(threads, "_registry", lambda: tmp_path)
        monkeypatch.setattr(threads, "cores", lambda: 4)
        monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))  # an idle machine
        monkeypatch.setitem(threads._state, "registered", None)
        (tmp_path / str(os.getppid())).write_text("")  # another live interp-heads process
        (tmp_path / "999999999").write_text("")  # a dead one: not counted, removed
        assert threads.configure(None) == 2 and torch.get_num_threads() == 2
        assert not (tmp_path / "999999999").exists()
        (tmp_path / str(os.getppid())).unlink()
        threads.rebalance()
        assert torch.get_num_threads() == 4
        monkeypatch.setattr(
            os, "getloadavg", lambda: (6.5, 0.0, 0.0)
        )  # 4 own threads + 2.5 cores of other work
        threads.rebalance()
        assert torch.get_num_threads() == 2
        threads.unregister()
    finally:
        torch.set_num_threads(before)


# --------------------------------------------------------------------------- UX
def test_version_help_defaults_and_quiet_attribute(tmp_path, capsys):
    assert cli("--version") == 0
    assert capsys.readouterr().out.startswith("interp-heads ")
    assert cli("ablate", "--help") == 0
    out = " ".join(capsys.readouterr().out.split())  # help wraps lines
    assert (
        "examples (default: 100)" in out
        and "per answer (default: 16)" in out
        and "and k (default: 5)" in out
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
            tmp_path / "a",
            "--quiet",
        )
        == 0
    )
    assert capsys.readouterr().err == ""
    assert cli("ablate", "--n-eval", "many") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--n-eval" in err


def test_long_messages_are_cut(tmp_path, capsys):
    assert cli("tasks", "show", tmp_path / ("x" * 2000)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(err) < 400, len(err)


def test_report_keeps_newlines_and_bands_have_no_markers():
    from interp_heads.figures.curves import plot_sweep
    from interp_heads.report.tables import examples_table

    gens = pd.DataFrame(
        {
            "task": "t",
            "selection": ["baseline", "TopK"],
            "k": [0, 2],
            "seed": 0,
            "example_id": "a",
            "generation": ["one\ntwo <b>", "x"],
            "question": "q",
            "answer": "a",
        }
    )
    html = examples_table(gens)
    assert "one<br>two &lt;b&gt;" in html and "\\n" not in html
    summary = pd.DataFrame(
        {
            "task": "t",
            "selection": ["TopK", "TopK"],
            "k": [2, 4],
            "metric": "accuracy",
            "label": "Accuracy",
            "mean": [0.5, 0.4],
            "ci_low": [0.4, 0.3],
            "ci_high": [0.6, 0.5],
            "n_draws": 1,
            "n_examples": 4,
        }
    )
    fig = plot_sweep(summary)
    bands = [t for t in fig.data if t.fill == "toself"]
    assert bands and all(t.mode == "lines" for t in bands)
