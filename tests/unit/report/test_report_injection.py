"""Every value the report reads back from a run folder is text on the page, never markup.

A run folder is shared, so any of its files may have been edited by hand. Each vector below
plants one hostile value (an ``<img onerror>`` that would mark the page, after a ``</script>``,
with a U+202E that would reverse the text) in one place the report reads: ``manifest.json``,
the tables, ``generations.jsonl``, ``heads/*.csv``. The page must show the value (its marker
``data-v=V<name>V`` is on the page) escaped: no ``<img``, no U+202E outside the figures' data,
and in headless Chromium no script runs. The page's modules escape only through
``interp_heads.figures.escape`` (checked in their source).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from interp_heads.report import build_report
from tests.helpers import ROOT, TINY_CONFIG, finished_run, headless

CONFIG = TINY_CONFIG
PACKAGE = ROOT / "interp_heads"


def _mark(tag: str) -> str:
    return "data-v=V" + re.sub(r"\W", "", tag) + "V"


def payload(tag: str) -> str:
    """A hostile value; :func:`_mark` is how the page shows that this vector reached it."""
    mark = re.sub(r"\W", "", tag)
    return (
        f"</script><img src=x {_mark(tag)} "
        f"onerror=\"document.body.setAttribute('data-pwned','{mark}')\">\u202e'\""
    )


def _manifest(edit):
    def plant(run: Path, value: str) -> None:
        m = json.loads((run / "manifest.json").read_text())
        edit(m, value)
        (run / "manifest.json").write_text(json.dumps(m))

    return plant


def _table(name: str, column: str, *, header: bool = False, **where):
    """Plant the value in ``column`` of a saved table (or as a column's name): in every row, or
    in the rows whose columns equal ``where`` (other columns set alike, e.g. ``is_kind``)."""

    def plant(run: Path, value: str) -> None:
        path = run / name
        if path.suffix == ".parquet":
            frame = pd.read_parquet(path)
        elif path.suffix == ".jsonl":
            frame = pd.read_json(path, lines=True, dtype={"example_id": str})
        else:
            frame = pd.read_csv(path)
        if header:
            frame = frame.rename(columns={column: value})
        else:
            rows = pd.Series(True, index=frame.index)
            for key, want in where.items():
                rows &= frame[key] == want
            frame[column] = frame[column].astype(object)
            frame.loc[rows, column] = value
        if path.suffix == ".parquet":
            frame.to_parquet(path, index=False)
        elif path.suffix == ".jsonl":
            frame.to_json(path, orient="records", lines=True, force_ascii=False)
        else:
            frame.to_csv(path, index=False)  # raw: a hand-made file, not the tool's writer

    return plant


def _without_prompts(plant):
    """An older folder: no ``prompts.jsonl``, so the page shows each question instead."""

    def older(run: Path, value: str) -> None:
        (run / "prompts.jsonl").unlink()
        plant(run, value)

    return older


def _heads_csv(name: str, column: str):
    rows = {
        "stability.csv": {"task": "t", "k": 2, "n_examples": 4, "n_half": 2, "jaccard": 0.5,
                          "spearman": 0.1, "unstable": False},
        "specificity.csv": {"source": "t", "task": "t", "k": 2, "drop": 0.1, "ci_low": 0.0,
                            "ci_high": 0.2},
    }  # fmt: skip

    def plant(run: Path, value: str) -> None:  # a row more (several vectors share a file)
        path = run / "heads" / name
        path.parent.mkdir(exist_ok=True)
        frame = pd.read_csv(path, dtype=str) if path.exists() else None
        row = pd.DataFrame([{**rows[name], column: value}], dtype=str)
        pd.concat([frame, row] if frame is not None else [row]).to_csv(path, index=False)

    return plant


def _known_kind(run: Path, value: str) -> None:
    """Every head of the top ranks a head of a (hostile) kind: the known-kinds table names it."""
    known = pd.read_csv(run / "known_heads.csv")
    known = known.assign(kind=value, is_kind=True).drop_duplicates(["layer", "head"])
    known.to_csv(run / "known_heads.csv", index=False)


def _stab(m: dict) -> dict:
    return m["stability"]["tiny_echo"]


def _ablate(m: dict, v: str) -> None:
    m.update(command="ablate", ranking={"source": v, "path": "/tmp/r", "info": {"method": v}})
    m["config"]["heads"] = [[v, v], [0, 1]]


OLDER = "generations.jsonl question (a folder without prompts.jsonl)"
VECTORS = {
    "manifest config.model": _manifest(lambda m, v: m["config"].update(model=v)),
    "manifest config_digest": _manifest(lambda m, v: m.update(config_digest=v)),
    "manifest status without steps": _manifest(
        lambda m, v: [m.pop("steps"), m.pop("plan"), m.update(status=v)]
    ),
    "manifest error of a failed run": _manifest(lambda m, v: m.update(status="failed", error=v)),
    "manifest data task name": _manifest(lambda m, v: m["data"].update({v: {"n_examples": 1}})),
    "manifest data source": _manifest(lambda m, v: m["data"]["tiny_echo"].update(source=v)),
    "manifest data sha256": _manifest(lambda m, v: m["data"]["tiny_echo"].update(sha256=v)),
    "manifest stability task": _manifest(lambda m, v: m["stability"].update({v: _stab(m)})),
    "manifest stability n_examples": _manifest(lambda m, v: _stab(m).update(n_examples=v)),
    "manifest stability n_half": _manifest(lambda m, v: _stab(m).update(n_half=[v, v])),
    "manifest stability k": _manifest(
        lambda m, v: _stab(m).update(jaccard={v: 0.5}, shared={v: 1})
    ),
    "manifest stability jaccard": _manifest(lambda m, v: _stab(m)["jaccard"].update({"2": v})),
    "manifest stability shared": _manifest(lambda m, v: _stab(m)["shared"].update({"2": v})),
    "manifest stability spearman": _manifest(lambda m, v: _stab(m).update(spearman=v)),
    "manifest stability skipped": _manifest(
        lambda m, v: m["stability"].update(tiny_echo={"skipped": v, "n_examples": v})
    ),
    "manifest verification verdict": _manifest(
        lambda m, v: m["verification"]["tiny_echo"].update(verdict=v)
    ),
    "manifest verification skipped": _manifest(
        lambda m, v: m["verification"].update(tiny_echo={"skipped": v})
    ),
    "manifest probe": _manifest(
        lambda m, v: m.update(probe={"kind": v, "position": v, "tasks": [v], "chance": v})
    ),
    "manifest timings key": _manifest(lambda m, v: m["timings"].update({v: 1.0})),
    "manifest versions": _manifest(lambda m, v: m.update(versions={v: v})),
    "manifest git": _manifest(lambda m, v: m.update(git=v)),
    "manifest seeds": _manifest(lambda m, v: m.update(seeds={v: v})),
    "manifest metrics": _manifest(lambda m, v: m.update(metrics={v: v})),
    "manifest model": _manifest(lambda m, v: m.update(model={"spec": v})),
    "manifest ablate ranking": _manifest(_ablate),
    "manifest attribute next command": _manifest(
        lambda m, v: [m.update(command="attribute"), m["config"].update(model=v, tasks=[v])]
    ),
    "summary.parquet task": _table("summary.parquet", "task"),
    "summary.parquet label": _table("summary.parquet", "label", metric="chrf"),
    "summary.parquet selection": _table("summary.parquet", "selection"),
    "significance.csv task": _table("significance.csv", "task"),
    "significance.csv control": _table("significance.csv", "control"),
    "significance.csv label": _table("significance.csv", "label"),
    "baseline.csv task": _table("baseline.csv", "task"),
    "baseline.csv a column's name": _table("baseline.csv", "n_eval", header=True),
    "prompts.jsonl prompt": _table("prompts.jsonl", "prompt"),
    OLDER: _without_prompts(_table("generations.jsonl", "question")),
    "generations.jsonl answer": _table("generations.jsonl", "answer"),
    "generations.jsonl generation": _table("generations.jsonl", "generation"),
    "generations.jsonl task": _table("generations.jsonl", "task"),
    "attribution.parquet task": _table("attribution.parquet", "task"),
    "known_heads.csv kind": _known_kind,
    "heads/stability.csv task": _heads_csv("stability.csv", "task"),
    "heads/stability.csv n_examples": _heads_csv("stability.csv", "n_examples"),
    "heads/stability.csv n_half": _heads_csv("stability.csv", "n_half"),
    "heads/stability.csv jaccard": _heads_csv("stability.csv", "jaccard"),
    "heads/specificity.csv task": _heads_csv("specificity.csv", "task"),
    "heads/specificity.csv source": _heads_csv("specificity.csv", "source"),
}


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    return finished_run(tmp_path_factory.mktemp("inject"))


def _outside_scripts(page: str) -> str:
    """The page without the content of its ``<script>`` elements (Plotly and figure data)."""
    return re.sub(r"(?s)<script[^>]*>.*?</script>", "<script></script>", page)


def _check_page(page: str, tags) -> None:
    for tag in tags:
        assert _mark(tag) in page, f"{tag}: the value is not on the page"
    assert "<img" not in page.lower(), "raw markup from the run folder"
    assert "<script>document" not in page
    text = _outside_scripts(page)
    assert "\u202e" not in text, "a bidi control reached the page"
    title = re.search(r"(?s)<title>(.*?)</title>", page).group(1)
    assert not re.search("[\u200e\u200f\u202a-\u202e\u2066-\u2069]", title)


@pytest.mark.parametrize("tag", list(VECTORS))
def test_a_hostile_value_is_shown_as_text(tag, finished, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    VECTORS[tag](run, payload(tag))
    build_report(run)
    _check_page((run / "index.html").read_text(), [tag])


def test_the_page_modules_escape_only_through_one_function():
    modules = [*(PACKAGE / "report").glob("*.py"), PACKAGE / "figures" / "notebook.py"]
    for path in modules:
        if path.name == "escape.py":
            continue
        src = path.read_text()
        for banned in ("html.escape(", "escape=True", "escape=False", "import html\n"):
            assert banned not in src, f"{path.name} escapes by itself ({banned!r})"


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed")
def test_no_planted_script_runs_in_headless_chromium(finished, tmp_path):
    groups = {  # vectors that fit one page together (one manifest command each)
        "run": [t for t in VECTORS if t not in ("manifest ablate ranking",
                                                "manifest attribute next command",
                                                "manifest status without steps",
                                                "manifest stability skipped",
                                                "manifest verification skipped",
                                                OLDER, "prompts.jsonl prompt")],
        "prompts": ["prompts.jsonl prompt"],  # the run group renames the tasks
        "ablate": ["manifest ablate ranking", "summary.parquet task", "generations.jsonl answer",
                   OLDER],
        "attribute": ["manifest attribute next command", "manifest status without steps",
                      "manifest stability skipped", "manifest verification skipped"],
    }  # fmt: skip
    canary = tmp_path / "canary.html"  # the same payload unescaped: the check must see it run
    canary.write_text(f"<!DOCTYPE html><html><body>{payload('canary')}</body></html>")
    dom = headless("chromium", "--virtual-time-budget=10000", "--dump-dom", canary.as_uri()).stdout
    assert 'data-pwned="canary"' in dom, dom[:300]
    for name, tags in groups.items():
        run = tmp_path / name
        shutil.copytree(finished, run)
        for tag in tags:
            VECTORS[tag](run, payload(tag))
        build_report(run)
        _check_page((run / "index.html").read_text(), tags)
        url = (run / "index.html").resolve().as_uri()
        dom = headless("chromium", "--virtual-time-budget=10000", "--dump-dom", url).stdout
        assert "<body" in dom and 'class="plot-container plotly"' in dom, dom[:300]
        assert 'data-pwned="' not in dom and "<img" not in dom, name  # no script ran
