"""What the attribute and ablate pages show a reader: top heads with scores, a heatmap big
enough to read, every evaluated prompt as the model saw it with right/wrong marks, relative
links to the data, plotly.js once beside the page, and y axes named by their metric."""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
import torch

from interp_heads.attribution import HeadScores
from interp_heads.figures.curves import plot_sweep
from interp_heads.figures.heatmaps import ROW_PX, head_heatmap
from interp_heads.pipeline.rankings import ranking_provenance
from interp_heads.report import build_report, load_run, page
from interp_heads.report.generations import generations_section
from tests.helpers import DATA, chromium, cli, headless

TASK = str(DATA / "tiny_echo.jsonl")


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """An ``attribute`` folder and an ``ablate`` folder beside it, on the tiny model."""
    root = tmp_path_factory.mktemp("pages")
    argv = ["--model", "tiny", "--task", TASK, "--no-filter", "--quiet"]
    assert cli("attribute", *argv, "--n-examples", 6, "--out", root / "attr") == 0
    assert cli("ablate", *argv, "--ranking", root / "attr", "--k", "2,4", "--seeds", 2,
                 "--metrics", "accuracy,chrf", "--max-new-tokens", 3, "--out", root / "abl") == 0  # fmt: skip
    return root


def test_heatmap_is_big_enough_to_read():
    """30 x 9 heads (SmolLM2's shape): 18+ px rows, every layer and head ticked, markers
    smaller than a cell, the legend below the plot (not over the colour bar), top k outlined."""
    gen = torch.Generator().manual_seed(0)
    scores = HeadScores(torch.randn(30, 9, generator=gen), "atp", "t")
    marks = {"induction": [(5, 1), (7, 2)], "successor": [(20, 3)]}
    fig = head_heatmap(scores, "abs", None, marks, top=16)
    lay = fig.layout
    plot_h = lay.height - lay.margin.t - lay.margin.b
    assert plot_h / 30 >= 18 and ROW_PX >= 18
    assert lay.yaxis.dtick == 1 and lay.yaxis.tickmode == "linear" and lay.xaxis.dtick == 1
    cell = min(plot_h / 30, (lay.width - 170) / 9)
    sizes = [t.marker.size for t in fig.data if t.type == "scatter" and t.x[0] is not None]
    assert sizes and max(sizes) < cell
    assert lay.legend.orientation == "h" and lay.legend.y < 0  # under the plot
    outlined = {(round(s.y0 + 0.5), round(s.x0 + 0.5)) for s in lay.shapes}
    assert outlined == set(scores.top(16, "abs"))  # exactly the top 16 heads
    assert any("top 16" in (t.name or "") for t in fig.data)


def test_attribute_page_has_a_table_of_the_top_heads(folders):
    text = (folders / "attr" / "index.html").read_text()
    ranking = pd.read_csv(folders / "attr" / "ranking.csv").sort_values("rank")
    assert "top 10 heads" in text
    table = text.split("top 10 heads", 1)[1].split("</table>")[0]
    for r in ranking.head(10).itertuples():
        assert f"<td>{r.label}</td>" in table and f"{r.score:.4g}" in table
    assert f"<td>{ranking.label.iloc[10]}</td>" not in table


def test_ablate_page_shows_prompts_marks_links_and_loads_plotly_once(folders):
    abl = folders / "abl"
    text = (abl / "index.html").read_text()
    prompts = pd.read_json(abl / "prompts.jsonl", lines=True, dtype={"example_id": str})
    given = {t["id"]: t["prompt"] for t in map(json.loads, Path(TASK).read_text().splitlines())}
    ranked_on = set(ranking_provenance(str(folders / "attr"), "tiny_echo")["example_ids"])
    evaluated = [i for i in given if i not in ranked_on]  # in the file's order
    assert list(prompts.example_id) == evaluated and len(evaluated) == 10  # 16 - 6 ranked on
    assert all(given[r.example_id] == r.prompt for r in prompts.itertuples())
    for p in prompts.prompt:  # every evaluated example, the prompt itself (not the question)
        assert f"<pre>{html.escape(p)}</pre>" in text
    assert text.count("class='bad'>&#10007;</span>") >= 10  # the tiny model answers nothing right
    for name in ("generations.jsonl", "prompts.jsonl", "sweep.parquet", "summary.csv",
                 "significance.csv", "manifest.json"):  # fmt: skip
        assert f'href="{name}"' in text, name
    assert 'href="../attr/index.html"' in text and "file://" not in text
    assert text.count("<script type='text/javascript' src='figures/plotly.min.js'>") == 1
    assert len(text.encode()) < 200_000  # was 4.8 MB with plotly.js inline
    assert "chrF (offline stand-in" not in text.split("<h2>Provenance</h2>")[0]  # asked by name


def test_generations_table_filters_in_headless_chromium(folders, tmp_path):
    """The k and row selectors work in a browser (the table's own script)."""

    if chromium() is None:
        pytest.skip("chromium is not installed")
    run = page.current(load_run(folders / "abl"))
    section = generations_section(run["generations"], run["records"], run["prompts"])
    script = ("<script>var b=document.querySelector('.gens');b.querySelector('.ih-k').value='2';"
              "var s=b.querySelector('.ih-show');s.value='right';ihGens(s);</script>")  # fmt: skip
    doc = tmp_path / "g.html"
    doc.write_text(f"<!DOCTYPE html><html><body>{section}{script}</body></html>")
    dom = headless(chromium(), "--dump-dom", doc.resolve().as_uri()).stdout
    rows = re.findall(r"<tr data-t2[^>]*>", dom)
    assert len(rows) == 10 and all('style="display: none;"' in r for r in rows)  # none right
    shown = re.findall(r'<span class="ih-ans" data-k="(\d)"( style="[^"]*")?', dom)
    assert {k for k, style in shown if "none" not in style} == {"2"}


def test_stand_in_label_only_when_it_stood_in():
    label = "chrF (offline stand-in, not COMET)"
    assert page.metric_label("chrf", label, ["accuracy", "chrf"]) == "chrF"
    mini = "MiniLM cosine (offline stand-in, not COMET)"
    assert page.metric_label("minilm_cosine", mini, ["accuracy", "comet"]) == mini  # fell back
    assert page.metric_label("minilm_cosine", mini, ["minilm_cosine"]) == "MiniLM cosine"


def test_each_metric_has_its_own_y_axis_title():
    rows = [dict(task="t", selection=sel, k=k, metric=m, label=lab, mean=0.5, ci_low=0.4,
                 ci_high=0.6, n_draws=1, n_examples=4)
            for sel in ("TopK", "RandomK") for k in (2, 4)
            for m, lab in (("accuracy", "Accuracy"), ("chrf", "chrF"))]  # fmt: skip
    fig = plot_sweep(pd.DataFrame(rows))
    titles = [fig.layout[n].title.text for n in fig.layout if n.startswith("yaxis")]
    assert "Accuracy" in titles and "chrF" in titles and "Score" not in titles


def test_old_folder_without_prompts_still_shows_its_question(folders, tmp_path):
    old = tmp_path / "old"
    shutil.copytree(folders / "abl", old)
    (old / "prompts.jsonl").unlink()
    text = build_report(old).read_text()
    assert "Repeat the word: key" in text and "Example generations under masking" in text
