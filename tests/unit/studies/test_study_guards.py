"""The study layer's guards: ``--param`` values typed and checked when the study is built,
``--docs`` and ``--runs`` checked before any run, pages written through the store's writer
(never through a link), read back bounded (a FIFO refused, not waited on), and every page's
untrusted text escaped (rendered with markdown-it as GitHub-like viewers do)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from interp_heads.errors import InputError, PipelineError
from interp_heads.studies import get_study, run_study
from tests.helpers import DATA, cli, refused_without_waiting

ECHO = str(DATA / "tiny_echo.jsonl")
PACKAGE = Path(__file__).resolve().parents[3] / "interp_heads"
CLAIM = {"model": "tiny", "k": "2", "max_new_tokens": "3", "filter_correct": "false"}


def _claim_argv(tmp_path, *extra, ranking="R", **params):
    values = {"task": ECHO, "ranking": str(tmp_path / ranking), **CLAIM, **params}
    argv = ["study", "claim", "--size", "small", "--runs", tmp_path / "SR", "--docs",
            tmp_path / "SD", *extra]  # fmt: skip
    for k, v in values.items():
        argv += ["--param", f"{k}={v}"]
    return argv


BAD_PARAMS = [
    ("k", "abc"), ("k", "1e9"), ("k", "0"), ("k", "-3"), ("k", "5" * 5000), ("k", "2.5"), ("k", "\u0661"),
    ("max_new_tokens", "abc"), ("max_new_tokens", "0"), ("max_new_tokens", "9" * 30),
    ("filter_correct", "yes please"), ("filter_correct", "2"), ("task", "x" * 5000),
]  # fmt: skip


@pytest.mark.parametrize(("key", "value"), BAD_PARAMS)
def test_a_bad_param_is_one_line_exit_2_before_any_run(tmp_path, capsys, key, value):
    assert cli(*_claim_argv(tmp_path, **{key: value})) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and f"--param {key}=" in err
    assert "internal error" not in err and len(err) < 300
    assert not (tmp_path / "SR").exists() and not (tmp_path / "SD").exists()


def test_params_are_typed():
    study = get_study("claim", task=ECHO, ranking="r", k="7", filter_correct="No")
    assert study.param("k") == 7 and study.param("filter_correct") is False
    assert study.param("max_new_tokens") == 8  # the default, typed too


def test_docs_that_is_a_file_or_a_link_is_refused_before_any_run(tmp_path, capsys):
    (tmp_path / "SD").write_text("a file")
    assert cli(*_claim_argv(tmp_path)) == 2
    assert "--docs" in capsys.readouterr().err and not (tmp_path / "SR").exists()
    (tmp_path / "SD").unlink()
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "SD")
    assert cli(*_claim_argv(tmp_path)) == 2
    assert "symbolic link" in capsys.readouterr().err and not (tmp_path / "SR").exists()


@pytest.mark.parametrize("linked", ["claim", "shared", "claim/mean_all"])
def test_a_linked_study_run_root_is_refused_before_any_run(tmp_path, capsys, linked):
    (tmp_path / "SR" / Path(linked).parent).mkdir(parents=True, exist_ok=True)
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "SR" / linked)
    assert cli(*_claim_argv(tmp_path)) == 2
    err = capsys.readouterr().err
    assert "symbolic link" in err and len(err.strip().splitlines()) == 1
    assert not any((tmp_path / "elsewhere").iterdir())


def test_shared_linked_to_the_working_folder_is_one_line_not_a_validation_error(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "SR").mkdir()
    os.symlink(tmp_path, tmp_path / "SR" / "shared")
    assert cli(*_claim_argv(tmp_path)) == 2
    err = capsys.readouterr().err
    assert "ValidationError" not in err and "internal error" not in err
    assert len(err.strip().splitlines()) == 1


def test_study_list_works_from_any_folder(tmp_path):
    code = "from interp_heads.cli import main; raise SystemExit(main(['study', '--list']))"
    env = {**os.environ, "PYTHONPATH": str(PACKAGE.parent)}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "head_sets" in done.stdout


def test_claim_adds_logit_diff_only_when_every_example_has_distractors(tmp_path):
    lines = Path(ECHO).read_text().splitlines()
    import json

    rows = [json.loads(x) for x in lines if x.strip()]
    rows[0]["distractors"] = ["zzz"]
    some = tmp_path / "some.jsonl"
    some.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    study = get_study("claim", task=str(some), ranking="r", **CLAIM)
    assert "logit_diff" not in study.options()["metric"]
    for r in rows:
        r["distractors"] = ["zzz"]
    every = tmp_path / "all.jsonl"
    every.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    study = get_study("claim", task=str(every), ranking="r", **CLAIM)
    assert "logit_diff" in study.options()["metric"]


def test_mask_heads_refuses_a_scale_factor_past_a_float(tiny, untyped):
    from interp_heads import mask_heads

    with pytest.raises(InputError, match="finite number"):
        with mask_heads(tiny, ["L0H0"], "scale", scale_factor=10**400):
            pass


def test_a_task_path_with_a_newline_is_shown_escaped(capsys):
    from interp_heads.errors import one_line
    from interp_heads.tasks import load_task

    with pytest.raises(Exception) as info:
        load_task("dir\nx/evil.jsonl")
    assert "dir\\nx/evil.jsonl" in one_line(info.value)


# --------------------------------------------------------------------------- pages
def test_a_page_replaces_a_link_and_leaves_its_target(tmp_path):
    from interp_heads.store.pages import write_page

    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / "SD").mkdir()
    os.symlink(victim, tmp_path / "SD" / "claim.md")
    write_page(tmp_path / "SD" / "claim.md", "# page\n")
    assert victim.read_text() == "precious"
    assert not (tmp_path / "SD" / "claim.md").is_symlink()


def test_reading_back_a_fifo_page_is_refused_not_waited_on(tmp_path):
    from interp_heads.store.pages import read_page

    fifo = tmp_path / "results.md"
    os.mkfifo(fifo)
    assert "FIFO" in refused_without_waiting(lambda: read_page(fifo), PipelineError)


def test_no_study_page_is_written_or_read_past_the_store():
    """Every page writer goes through ``store.pages`` (atomic, no-follow, bounded reads)."""
    plain = re.compile(r"\.(write_text|read_text|write_html)\(|open\([^)]*['\"]w")
    found = [
        f"{p.name}:{i}"
        for p in sorted((PACKAGE / "studies").glob("*.py"))
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if plain.search(line) and "(tmp" not in line
    ]
    assert found == []


HOSTILE = "x`<img src=x onerror=alert(1)>|\n# heading *b* [l](javascript:x)"


def _elements(html: str) -> list[str]:
    return re.findall(r"<([a-zA-Z][a-zA-Z0-9]*)", html)


def test_md_leaves_no_markup_of_its_own():
    from markdown_it import MarkdownIt

    from interp_heads.figures.escape import md

    render = MarkdownIt("commonmark", {"html": True}).render
    for text in (HOSTILE, "<script>x</script>", "a\r\nb", "```", "\\`", "&lt;img&gt;"):
        for where in ("{}", "| {} |", "# T {}", "* {}", "**{}**", "[{}](x)"):
            safe, plain = render(where.format(md(text))), render(where.format("word"))
            assert _elements(safe) == _elements(plain), (text, where, safe)


@pytest.fixture(scope="module")
def ranking(tmp_path_factory):
    from interp_heads.pipeline.experiment import RunConfig, attribute_steps, run_experiment

    here = tmp_path_factory.mktemp("rank")
    task = here / "<img src=x onerror=alert(1)>.jsonl"  # the task file name
    shutil.copy(ECHO, task)
    out = here / "r`<img src=x onerror=alert(1)>\n# h"
    config = RunConfig.from_dict({"model": "tiny", "tasks": [str(task)], "n_rank": 4, "n_eval": 8,
                                  "attribution": "atp", "filter_correct": False, "verify": 0})  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_experiment(config, out, quiet=True, steps=attribute_steps())
    return out, task


def test_the_claim_page_of_hostile_names_holds_no_element_of_theirs(ranking, tmp_path):
    """The issue's claim study: a task file named as an ``<img>`` tag, a ranking folder with a
    backtick, a tag and a newline, and ``claim.md`` a link to a victim."""
    from markdown_it import MarkdownIt

    ranking, task = ranking
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / "SD").mkdir()
    os.symlink(victim, tmp_path / "SD" / "claim.md")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pages = run_study("claim", tmp_path / "SR", size="small", docs=tmp_path / "SD",
                          quiet=True, params={"task": str(task), "ranking": str(ranking), **CLAIM})  # fmt: skip
    assert victim.read_text() == "precious"
    page = pages[0]
    assert page.name == "claim.md" and not page.is_symlink()
    tokens = MarkdownIt("commonmark", {"html": True}).parse(page.read_text())
    html = [t for t in tokens if t.type.startswith("html")]
    html += [c for t in tokens for c in t.children or [] if c.type.startswith("html")]
    assert html == []  # the tool writes no raw HTML: any there would be a name's
    assert "onerror" in page.read_text()  # the names are on the page, as text
    assert not any(t.type == "heading_open" and t.markup == "#" and "h" == t.tag
                   for t in tokens)  # fmt: skip
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert not any(h.strip() in ("h", "h\\") for h in headings)


def test_the_compare_block_of_a_hostile_runs_folder_holds_no_element_of_its(tmp_path):
    """The compare page's generated block names the runs folder: rendered for a hostile name it
    has the same elements as for a plain one (the tool's own comments included)."""
    from markdown_it import MarkdownIt

    from interp_heads.studies.compare import markdown

    render = MarkdownIt("commonmark", {"html": True}).render
    hostile = render(markdown({}, Path(HOSTILE), None))
    plain = render(markdown({}, Path("runs"), None))
    assert _elements(hostile) == _elements(plain)
    assert "onerror" in hostile and "<img" not in hostile


def test_md_frame_escapes_names_and_keeps_numbers():
    import pandas as pd

    from interp_heads.figures.escape import md_frame

    frame = md_frame(pd.DataFrame({"task": ["a|b", "<i>"], "n": [1, 2]}))
    assert list(frame.task) == ["a\\|b", "&lt;i&gt;"] and list(frame.n) == [1, 2]


def test_the_results_page_tables_keep_a_task_name_as_text():
    from markdown_it import MarkdownIt

    from interp_heads.studies.seed_figure.tables import md as table

    render = MarkdownIt("commonmark", {"html": True}).render
    hostile = render(table([{"task": HOSTILE, "k": 32, "TopK": "0.10"}]))
    plain = render(table([{"task": "word", "k": 32, "TopK": "0.10"}]))
    assert _elements(hostile) == _elements(plain), hostile
