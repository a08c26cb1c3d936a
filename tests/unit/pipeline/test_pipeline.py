"""The pipeline on the tiny model: config validation, run directory, resume after a real kill."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import warnings

import pandas as pd
import pytest

from interp_heads.pipeline.experiment import PipelineError, RunConfig, run_pipeline
from tests.helpers import DATA

ROOT = DATA.parents[1]


def _cfg(**over) -> RunConfig:
    d = {
        "model": "tiny",
        "tasks": [str(DATA / "tiny_echo.jsonl")],
        "n_rank": 4,
        "n_eval": 8,
        "ks": [2, 4, 8],
        "selections": ["topk", "randomk", "layermatched"],
        "seeds": 2,
        "metrics": ["accuracy", "chrf"],
        "max_new_tokens": 4,
        "batch_size": 8,
        "filter_correct": False,
    }
    d.update(over)
    return RunConfig.from_dict(d)


def _run(cfg, out, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the random model answers nothing: low-baseline warnings
        return run_pipeline(cfg, out, quiet=True, **kw)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    _run(_cfg(), out)
    return out


def test_run_directory_has_every_output(tiny_run):
    names = {p.name for p in tiny_run.iterdir()}
    assert {
        "manifest.json",
        "attribution.parquet",
        "ranking.csv",
        "sweep.parquet",
        "summary.csv",
        "summary.parquet",
        "generations.jsonl",
        "baseline.csv",
        "figures",
        "index.html",
        "conditions",
    } <= names
    manifest = json.loads((tiny_run / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert {"versions", "git", "model", "data", "seeds", "timings", "config"} <= set(manifest)
    assert manifest["data"]["tiny_echo"]["sha256"]
    assert {"load_model", "tiny_echo/attribution", "sweep", "report", "total"} <= set(
        manifest["timings"]
    )
    split = manifest["splits"]["tiny_echo"]
    assert (
        len(split["rank"]) == 4
        and len(split["eval"]) == 8
        and not set(split["rank"]) & set(split["eval"])
    )
    rec = pd.read_parquet(tiny_run / "sweep.parquet")
    assert set(rec.example_id) == set(split["eval"])
    assert sorted(rec.k.unique()) == [0, 2, 4, 8]
    ranking = pd.read_csv(tiny_run / "ranking.csv")
    assert len(ranking) == 12 and list(ranking["rank"]) == list(range(1, 13))
    assert {p.name for p in (tiny_run / "figures").glob("*.html")} == {
        "seed_figure.html",
        "heatmap_tiny_echo.html",
    }


def test_config_toml_and_validation(tmp_path):
    cfg = RunConfig.from_toml(DATA / "tiny.toml")
    assert cfg.model == "tiny" and cfg.ks == [2, 4, 8]
    for name in ("seed_figure.toml", "quick.toml"):
        RunConfig.from_toml(ROOT / "configs" / name)
    bad = {
        "unknown key": ("bogus = 1\n", "unknown key(s) bogus"),
        "wrong type": ('ks = "16"\n', "ks = '16': must be a valid list"),
        "bool as int": ("seeds = true\n", "seeds = True: must be a valid integer"),
        "k <= 0": ("ks = [0, 4]\n", "ks.0 = 0: must be greater than 0"),
        "wrong section": ("[sweep]\nn_rank = 3\n", "[sweep] has no key 'n_rank'"),
        "twice": ("ks = [1]\n[sweep]\nks = [2]\n", "ks given twice"),
        "syntax": ("ks = [1,\n", "malformed config"),
        "method": ('attribution = "magic"\n', "unknown attribution method 'magic'"),
        "exact_layers < 0": ("exact_layers = -1\n", "must be greater than or equal to 0"),
        "exact_layers, gradxact": (
            'attribution = "gradxact"\nexact_layers = 1\n',
            "exact_layers needs attribution 'ablation_atp'",
        ),
        "exact_layers, zero": ('ablation = "zero"\nexact_layers = 2\n', "it needs ablation 'mean'"),
    }
    for text, msg in bad.values():
        path = tmp_path / "c.toml"
        path.write_text(text)
        with pytest.raises(
            PipelineError, match=msg.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
        ):
            RunConfig.from_toml(path)
    sectioned = tmp_path / "s.toml"
    sectioned.write_text('model = "tiny"\n[sweep]\nks = [2, 4, 8]\n[tasks]\nn_rank = 4\n')
    flat = RunConfig.from_dict({"model": "tiny", "ks": [2, 4, 8], "n_rank": 4})
    assert RunConfig.from_toml(sectioned).digest() == flat.digest()
    # exact_layers came later: unset, the digest is unchanged; set, it is another config
    assert (
        RunConfig.from_dict(
            {"model": "tiny", "ks": [2, 4, 8], "n_rank": 4, "exact_layers": None}
        ).digest()
        == flat.digest()
    )
    assert _cfg(exact_layers=0).digest() != _cfg().digest()
    assert flat.section("sweep").ks == [2, 4, 8]
    assert _cfg(scaled_ks=[0.5]).resolved_ks(12) == [2, 4, 6, 8]
    with pytest.raises(PipelineError, match="k=13 exceeds the number of heads"):
        _cfg(ks=[13]).resolved_ks(12)


def test_attribution_is_reused_when_config_matches(tiny_run, tmp_path):
    import shutil

    out = tmp_path / "again"
    shutil.copytree(tiny_run, out)
    before = (out / "attribution" / "tiny_echo.json").stat().st_mtime_ns
    _run(_cfg(), out)
    assert (out / "attribution" / "tiny_echo.json").stat().st_mtime_ns == before
    with pytest.raises(PipelineError, match="different config"):
        _run(_cfg(seeds=3), out)


def test_killed_run_resumes_to_the_uninterrupted_result(tiny_run, tmp_path):
    cfg_path, ref = DATA / "tiny.toml", tiny_run  # the same settings as the fixture's run
    out = tmp_path / "killed"
    cmd = [
        sys.executable,
        "-m",
        "interp_heads.cli",
        "run",
        "--config",
        str(cfg_path),
        "--out",
        str(out),
        "--quiet",
    ]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if len(list((out / "conditions").glob("tiny_echo__*.json"))) >= 2:
            break
        time.sleep(0.01)
    assert proc.poll() is None, "the run finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    n_done = len(list((out / "conditions").glob("tiny_echo__*.json")))
    assert 2 <= n_done < 16 and not (out / "index.html").exists()
    assert json.loads((out / "manifest.json").read_text())["status"] == "running"
    rc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert rc.returncode == 0, rc.stderr
    key = ["selection", "k", "seed", "example_id", "metric"]
    a = pd.read_parquet(ref / "sweep.parquet").sort_values(key).reset_index(drop=True)
    b = pd.read_parquet(out / "sweep.parquet").sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)
    ga = (
        pd.read_json(ref / "generations.jsonl", lines=True)
        .sort_values(key[:4])
        .reset_index(drop=True)
    )
    gb = (
        pd.read_json(out / "generations.jsonl", lines=True)
        .sort_values(key[:4])
        .reset_index(drop=True)
    )
    pd.testing.assert_frame_equal(ga, gb)
    pd.testing.assert_frame_equal(
        pd.read_csv(ref / "ranking.csv"), pd.read_csv(out / "ranking.csv")
    )
    manifest = json.loads((out / "manifest.json").read_text())
    assert (
        manifest["status"] == "complete" and len(manifest["earlier_timings"]) == 1
    )  # the killed run's


def test_exact_layers_needs_ablation_atp_and_is_recorded(tmp_path):
    # tiny_echo has corrupted prompts: "auto" means atp, which has no exact layers
    out = tmp_path / "bad"
    with pytest.raises(PipelineError, match="exact_layers needs attribution 'ablation_atp'"):
        _run(_cfg(attribution="auto", exact_layers=1), out)
    assert not (out / "baseline.csv").exists() and not (out / "attribution").exists()
    good = tmp_path / "good"
    _run(_cfg(attribution="ablation_atp", exact_layers=2, ks=[2], seeds=1), good)
    entry = json.loads(next((good / "attribution").glob("*.json")).read_text())
    assert entry["provenance"]["exact_layers"] == 2
    assert entry["metric"].endswith("layers < 2: the exact drop (mean ablation)")
