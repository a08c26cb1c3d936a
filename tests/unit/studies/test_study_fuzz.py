"""The fuzz of the study layer (the plan checks' fuzz, one layer up): every ``--param`` of
every study with bad values, and a symbolic link at every depth of a run folder, a study's runs
folder and its docs folder. Each case must be refused before anything is written, or write
inside the folder only: a snapshot of everything outside the folders is compared after each
case. The counts (cases, refused, written outside) are printed for the report."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import pytest

from interp_heads.errors import PipelineError
from interp_heads.store.layout import MARKER
from interp_heads.studies import STUDIES, run_study
from interp_heads.studies.options import needed, option_kinds
from tests.helpers import DATA, TINY_CONFIG, cli

ECHO = str(DATA / "tiny_echo.jsonl")
BAD = {
    int: ["abc", "1e9", "2.5", "", "-1", "0", "9" * 30, "5" * 5000, "0x10", "1_000", "١"],
    bool: ["yes please", "2", "", "truee", "nan", "x" * 5000],
    str: ["x" * 5000, "a\0b"],
}


class WouldRun(Exception):
    """A case that got past every check to a run (counted as not refused)."""


@pytest.fixture
def no_runs(monkeypatch):
    import interp_heads.pipeline.experiment as experiment

    def stop(*a, **k):
        raise WouldRun

    monkeypatch.setattr(experiment, "run_pipeline", stop)
    monkeypatch.setattr(experiment, "run_experiment", stop)


def _snapshot(root: Path, skip: tuple[Path, ...]) -> dict:
    """Every file under ``root`` (not descending into ``skip`` nor through links): its bytes."""
    out = {}
    for where, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if Path(where, d) not in skip]
        for n in names:
            p = Path(where, n)
            out[p] = p.read_bytes() if p.is_file() and not p.is_symlink() else os.readlink(p)
    return out


def _cases():
    for name in sorted(STUDIES.names()):
        study = STUDIES.get(name)
        for key, spec in option_kinds(study.Options).items():
            for value in BAD[spec.kind]:
                yield name, key, value
        yield name, "no_such_param", "1"


COUNTS = {"params": [0, 0, 0], "links": [0, 0, 0]}  # cases, refused, written outside


def _needed(name: str) -> dict:
    study = STUDIES.get(name)
    defaults = {"task": ECHO, "ranking": "ranking_folder"}
    return {k: defaults.get(k, "x") for k in needed(study.Options)}


def test_every_param_of_every_study_with_bad_values_is_refused_first(tmp_path, no_runs):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    before = _snapshot(tmp_path, ())
    cases = list(_cases())
    assert cases and any(c[0] == "claim" for c in cases)
    for name, key, value in cases:
        COUNTS["params"][0] += 1
        params = {**_needed(name), key: value}
        try:
            run_study(name, tmp_path / "SR", size="small", docs=tmp_path / "SD", params=params)
        except PipelineError as exc:
            assert "\n" not in str(exc).strip() and len(str(exc)) < 400, str(exc)
            COUNTS["params"][1] += 1
        except WouldRun:
            print(f"not refused: {name} {key}={value[:20]!r}")
        if _snapshot(tmp_path, ()) != before:
            COUNTS["params"][2] += 1
    print(f"\nparams fuzz: cases {COUNTS['params'][0]}, refused {COUNTS['params'][1]}, "
          f"written outside {COUNTS['params'][2]}")  # fmt: skip
    assert COUNTS["params"][1] == COUNTS["params"][0] and COUNTS["params"][2] == 0


RUN_DEPTHS = [
    "baseline", "attribution", "conditions", "figures", "unmasked", "scores", "heads",
    "heads/sufficiency", "heads/sufficiency/conditions", "heads/sufficient_sets",
    "heads/sufficient_sets/tiny_echo", "heads/sufficient_sets/tiny_echo/conditions",
    "heads/cross", "heads/cross/tiny_echo", "heads/cross/tiny_echo/conditions",
]  # fmt: skip
CLAIM = {"task": ECHO, "model": "tiny", "k": "2", "max_new_tokens": "3", "filter_correct": "false"}
STUDY_DEPTHS = ["claim", "claim/mean_all", "claim/mean_all/heads", "claim/mean_all/conditions",
                "shared", "shared/generations", "shared/values"]  # fmt: skip
DOCS_DEPTHS = ["SD", "SD/figures"]


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "V"
    (victim / "conditions").mkdir(parents=True)
    (victim / "conditions" / "config.json").write_text("precious")
    return victim


def _plant(where: Path, victim: Path) -> None:
    where.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(victim, where)


@pytest.mark.parametrize("depth", RUN_DEPTHS)
def test_a_link_at_any_depth_of_a_run_folder_is_refused(tmp_path, capsys, depth):
    run = tmp_path / "R"
    run.mkdir()
    (run / MARKER).write_text('{"tool": "interp_heads"}')
    victim = _victim(tmp_path)
    _plant(run / depth, victim)
    config = TINY_CONFIG + "sufficiency = true\nsufficiency_search = true\n"
    (tmp_path / "c.toml").write_text(config)
    before = _snapshot(tmp_path, (run,))
    code = cli("run", "--config", tmp_path / "c.toml", "--out", run, "--quiet")
    err = capsys.readouterr().err
    outside = _snapshot(tmp_path, (run,)) != before
    COUNTS["links"][0] += 1
    COUNTS["links"][1] += code == 2
    COUNTS["links"][2] += outside
    assert code == 2 and "symbolic link" in err and not outside


@pytest.mark.parametrize("depth", STUDY_DEPTHS + DOCS_DEPTHS)
def test_a_link_at_any_depth_of_a_study_root_or_docs_is_refused(tmp_path, no_runs, depth):
    victim = _victim(tmp_path)
    base = tmp_path if depth.startswith("SD") else tmp_path / "SR"
    _plant(base / depth, victim)
    before = _snapshot(victim, ())
    refused = False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run_study("claim", tmp_path / "SR", size="small", docs=tmp_path / "SD",
                      params={**CLAIM, "ranking": str(tmp_path / "rk")})  # fmt: skip
    except PipelineError:
        refused = True
    except WouldRun:
        pass
    outside = _snapshot(victim, ()) != before
    COUNTS["links"][0] += 1
    COUNTS["links"][1] += refused
    COUNTS["links"][2] += outside
    assert refused and not outside


def test_zz_report_the_counts():
    cases, refused, outside = COUNTS["links"]
    print(f"\nlinks fuzz: cases {cases}, refused {refused}, written outside {outside}")
    assert refused == cases and outside == 0
