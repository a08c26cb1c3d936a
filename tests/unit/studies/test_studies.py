"""Studies: a registered study's runs go through the pipeline and its page is read from the run
folders; a rerun resumes; every built-in study's configs load at both sizes; bad names and bad
changes are refused before any run starts."""

from __future__ import annotations

import pandas as pd
import pytest

from interp_heads.errors import PipelineError
from interp_heads.studies import SIZES, STUDIES, Study, StudyRun, run_study, study_config
from tests.helpers import DATA, ROOT, cli, snapshot

TINY = str(DATA / "tiny.toml")


class _Pair(Study):
    name = "test_pair"
    summary = "two tiny runs, one table"

    def runs(self, size):
        few = {"seeds": 1, "ks": [2], "metrics": ["chrf"], "selections": ["topk", "randomk"]}
        return [
            StudyRun(f"pair/{kind}", TINY, {"ablation": kind, **few}) for kind in ("zero", "mean")
        ]

    def write_pages(self, folders, docs):
        from interp_heads import load_run

        rows = []
        for folder, path in folders.items():
            summary = load_run(path).summary()
            rows += [f"{folder} {r.selection} {r.k} {r.mean:.6f}" for r in summary.itertuples()]
        docs.mkdir(parents=True, exist_ok=True)
        (docs / "pair.md").write_text("\n".join(rows) + "\n")
        return [docs / "pair.md"]


@pytest.fixture
def pair():
    STUDIES.register(_Pair)
    yield _Pair
    STUDIES.unregister(_Pair.name)


def test_a_study_runs_its_runs_and_writes_its_page_from_their_folders(pair, tmp_path):
    assert cli("study", "test_pair", "--runs", tmp_path / "runs", "--docs", tmp_path / "docs") == 0
    page = (tmp_path / "docs" / "pair.md").read_text().splitlines()
    want = []
    for kind in ("zero", "mean"):  # read back independently of load_run
        summary = pd.read_csv(tmp_path / "runs" / "pair" / kind / "summary.csv")
        want += [f"pair/{kind} {r.selection} {r.k} {r.mean:.6f}" for r in summary.itertuples()]
    assert page == want and len(want) >= 4
    import json

    kinds = [
        json.loads((tmp_path / "runs" / "pair" / k / "manifest.json").read_text())["config"][
            "ablation"
        ]
        for k in ("zero", "mean")
    ]
    assert kinds == ["zero", "mean"]


def test_a_second_call_resumes_every_run(pair, tmp_path):
    runs = tmp_path / "runs"
    assert cli("study", "test_pair", "--runs", runs, "--docs", tmp_path / "docs") == 0

    def entries():  # each finished condition and ranking: resume entries, rewritten only if redone
        return {
            p: p.stat().st_mtime_ns
            for k in ("zero", "mean")
            for sub in ("conditions", "attribution", "baseline")
            for p in (runs / "pair" / k / sub).glob("*.json")
        }

    before = entries()
    assert len(before) >= 8
    tables = {k: (runs / "pair" / k / "summary.csv").read_bytes() for k in ("zero", "mean")}
    assert cli("study", "test_pair", "--runs", runs, "--docs", tmp_path / "docs") == 0
    assert entries() == before
    assert {k: (runs / "pair" / k / "summary.csv").read_bytes() for k in tables} == tables


def test_list_names_every_study_with_its_sizes_and_times(pair, capsys):
    assert cli("study", "--list") == 0
    out = capsys.readouterr().out.splitlines()
    for name in ("seed_figure", "heads", "sufficiency", "compare", "test_pair"):
        line = next(line for line in out if line.startswith(f"{name}:"))
        assert "small:" in line and "full:" in line
    from interp_heads.studies import STUDIES

    measured = STUDIES.get("seed_figure").minutes["full"]  # the study's measured time, shown
    assert f"{measured:g} min" in next(line for line in out if line.startswith("seed_figure:"))


def test_an_unknown_study_is_one_line_and_exit_2(capsys):
    assert cli("study", "no_such_study") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no_such_study" in err[0] and "seed_figure" in err[0]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize(
    "name", ["seed_figure", "heads", "sufficiency", "compare", "spec_curve", "head_sets"]
)
def test_every_builtin_study_config_loads_at_each_size(name, size, monkeypatch):
    monkeypatch.chdir(ROOT)
    study = STUDIES.build(name)
    runs = study.runs(size)
    assert runs and len({r.folder for r in runs}) == len(runs)
    for run in runs:
        config = study_config(run, "elsewhere")
        for key, value in run.changes.items():
            got = getattr(config, key)
            want = value.replace("{runs}", "elsewhere") if isinstance(value, str) else value
            assert got == want or str(got) == str(want) or [str(v) for v in got] == want


def test_the_compare_variants_read_the_seed_runs_ranking_under_the_runs_folder(monkeypatch):
    monkeypatch.chdir(ROOT)
    study = STUDIES.build("compare")
    reading = [r for r in study.runs("full") if "ranking" in r.changes]
    assert len(reading) == 3
    assert {str(study_config(r, "/x/runs").ranking) for r in reading} == {"/x/runs/compare/seed"}


def test_a_bad_change_is_refused_before_any_run_starts(tmp_path):
    class Bad(_Pair):
        name = "test_bad"

        def runs(self, size):
            return [*super().runs(size), StudyRun("pair/bad", TINY, {"no_such_key": 1})]

    with pytest.raises(PipelineError, match="no_such_key"):
        run_study(Bad(), tmp_path / "runs", docs=tmp_path / "docs")
    assert not (tmp_path / "runs").exists() or snapshot(tmp_path / "runs") == {}
