"""A small-size study run writes its pages to a scratch folder, never over the committed docs:
``RUNS/NAME-small/docs`` unless ``--docs`` is given; the full size keeps ``docs/``.
Its baseline answers only the rows the run uses (``baseline = "needed"``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from interp_heads.studies import STUDIES, Study, StudyRun
from interp_heads.studies.runner import pages_folder
from tests.helpers import TINY_CONFIG, cli


class _OnePage(Study):
    """One tiny run (its config written by the test: ``config``) and one page."""

    name = "test_one_page"
    summary = "one tiny run, one page"
    config = ""

    def runs(self, size):
        changes = {"seeds": 1, "ks": [1], "selections": ["topk"]}
        return [StudyRun("one_page", self.config, changes)]

    def write_pages(self, folders, docs):
        docs.mkdir(parents=True, exist_ok=True)
        page = docs / "one_page.md"
        page.write_text("a page\n")
        return [page]


@pytest.fixture
def one_page():
    STUDIES.register(_OnePage)
    yield _OnePage
    STUDIES.unregister(_OnePage.name)


def test_the_pages_folder_by_size():
    assert pages_folder("x", "full") == Path("docs")
    assert pages_folder("x", "small", "somewhere") == Path("somewhere") / "x-small" / "docs"


def test_a_small_run_leaves_docs_alone(one_page, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # a docs/ here would be the committed pages
    (tmp_path / "tiny.toml").write_text(TINY_CONFIG)
    monkeypatch.setattr(one_page, "config", str(tmp_path / "tiny.toml"))
    runs = tmp_path / "runs"
    assert cli("study", one_page.name, "--size", "small", "--runs", runs, "--quiet") == 0
    written = runs / "test_one_page-small" / "docs" / "one_page.md"
    assert written.read_text() == "a page\n" and not (tmp_path / "docs").exists()
    assert f"wrote {written}" in capsys.readouterr().out  # the user is told where
    # the small size answers only the rows it ranks and evaluates: no every-row baseline table
    assert not (runs / "one_page" / "baseline.csv").exists()
    assert (runs / "one_page" / "summary.csv").exists()
    assert cli("study", one_page.name, "--size", "small", "--runs", runs, "--docs", "mine") == 0
    assert (tmp_path / "mine" / "one_page.md").exists() and not (tmp_path / "docs").exists()
