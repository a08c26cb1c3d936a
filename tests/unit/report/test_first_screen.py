"""Every run page opens with its finding: sentences and a verdict table on the first screen of a
1400x900 window (checked in headless Chromium), no legend cut, the words read from the run's
stored numbers and escaped."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pandas as pd
import pytest

from interp_heads.pipeline.experiment import RunConfig, run_pipeline
from interp_heads.report import build_report
from interp_heads.report.finding import finding_html
from tests.helpers import DATA, chromium, cli, headless

TASK = str(DATA / "tiny_echo.jsonl")

# appended to a copy of a page: where the finding and every legend sit, once the figures drew
MEASURE = """<script>window.addEventListener('load',function(){setTimeout(function(){
var out={width:window.innerWidth,height:window.innerHeight,finding:null,legends:[]};
var f=document.getElementById('finding');
if(f){var r=f.getBoundingClientRect();out.finding=[r.top,r.bottom,r.left,r.right];}
document.querySelectorAll('.js-plotly-plot').forEach(function(p){
 var svg=p.querySelector('svg.main-svg');if(!svg)return;var s=svg.getBoundingClientRect();
 p.querySelectorAll('g.legend').forEach(function(g){var r=g.getBoundingClientRect();
  out.legends.push({id:p.id,legend:[r.top,r.bottom,r.left,r.right],svg:[s.top,s.bottom,s.left,s.right]});});});
var pre=document.createElement('pre');pre.id='ih-check';pre.textContent=JSON.stringify(out);
document.body.appendChild(pre);},300);});</script>"""


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """An ``attribute`` page, an ``ablate`` page masking its ranking, and a two-task ``run``
    page (a study's run: sweep, ranking and stability on one page)."""
    root = tmp_path_factory.mktemp("first_screen")
    argv = ["--model", "tiny", "--task", TASK, "--no-filter", "--quiet"]
    assert cli("attribute", *argv, "--n-examples", 6, "--out", root / "attr") == 0
    assert cli("ablate", *argv, "--ranking", root / "attr", "--k", "2,4", "--seeds", 2,
               "--metrics", "accuracy,chrf", "--max-new-tokens", 3, "--out", root / "abl") == 0  # fmt: skip
    rows = [json.loads(line) for line in (DATA / "tiny_echo.jsonl").read_text().splitlines()]
    second = root / "tiny_echo2.jsonl"
    second.write_text("".join(json.dumps({**r, "task": "tiny_echo2"}) + "\n" for r in rows[::-1]))
    cfg = RunConfig.from_toml(DATA / "tiny.toml").changed({"tasks": [TASK, str(second)],
                                                            "n_eval": 4})  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_pipeline(cfg, root / "run", quiet=True)
    return {name: root / name for name in ("attr", "abl", "run")}


def _measure(index: Path, width: int, height: int = 900) -> dict:
    check = index.with_name("check.html")  # beside the page: its figures/plotly.min.js loads
    check.write_text(index.read_text().replace("</body>", MEASURE + "</body>"))
    dom = headless(chromium(), f"--window-size={width},{height}", "--virtual-time-budget=5000",
                   "--dump-dom", check.resolve().as_uri()).stdout  # fmt: skip
    found = re.search(r'<pre id="ih-check">([^<]*)</pre>', dom)
    assert found, "the page's script did not run"
    return json.loads(found.group(1))


@pytest.mark.parametrize("name", ["attr", "abl", "run"])
def test_finding_on_the_first_screen_and_no_legend_cut(pages, name):
    if chromium() is None:
        pytest.skip("no Chromium installed: the pages cannot be rendered here")
    index = pages[name] / "index.html"
    got = _measure(index, 1400)
    assert got["width"] == 1400  # the layout follows the width; the first screen is 900 px
    top, bottom, left, right = got["finding"]
    assert 0 <= top and bottom <= 900 and 0 <= left and right <= 1400  # the first screen
    assert got["legends"], "no legend was drawn"
    for width in (1400, 1000):  # 1000: a narrow window cut the study run page's legend
        for leg in _measure(index, width)["legends"]:
            lt, lb, ll, lr = leg["legend"]
            st, sb, sl, sr = leg["svg"]
            assert st - 1 <= lt and lb <= sb + 1 and sl - 1 <= ll and lr <= sr + 1, leg
            assert lr <= width, (width, leg)  # not past the window's right edge


def _section(page: str) -> str:
    return page[page.index('<section id="finding"') : page.index("</section>")]


def test_finding_precedes_every_figure_and_reads_the_stored_numbers(pages):
    page = build_report(pages["run"]).read_text()
    assert page.index('id="finding"') < page.index('id="fig-')  # before the first figure
    text = _section(page)
    sig = pd.read_csv(pages["run"] / "significance.csv")
    for task in ("tiny_echo", "tiny_echo2"):
        row = sig[(sig.task == task) & (sig.control == "RandomK") & (sig.metric == "accuracy")]
        row = row[row.k == row.k.max()].iloc[0]
        # the verdict in words, written by hand from the stored counts (10 examples, 5 draws)
        if row.n_examples < 10:
            want = f"undecided (n = {row.n_examples}; 10 needed)"
        else:
            want = f"undecided ({row.n_draws} random draws; 5 needed)"
        assert want in text
        ranking = pd.read_csv(pages["run"] / "ranking.csv")
        first = ranking[(ranking.task == task) & (ranking["rank"] == 1)].label.iloc[0]
        assert f"<td>{task}</td><td>{first}, " in text  # its rank-1 head leads the row
    assert "Warning:" in text and "per half needed" in text  # stability too small to tell


def test_ablate_finding_names_the_masked_ranking_heads(pages):
    text = _section(build_report(pages["abl"]).read_text())
    ranking = pd.read_csv(pages["attr"] / "ranking.csv").sort_values("rank")
    assert ", ".join(ranking.label.head(5)) in text


def test_unstable_ranking_is_said_first_and_escaped():
    attr = pd.DataFrame({"task": "<b>t</b>", "method": "atp<i>", "layer": [0, 0, 1],
                         "head": [0, 1, 0], "label": ["L0H0", "L0H1", "L1H0"],
                         "score": [3.0, 2.0, 1.0], "rank": [1, 2, 3]})  # fmt: skip
    entry = {"n_examples": 12, "n_half": [6, 6], "jaccard": {"8": 0.3333}, "shared": {"8": 4}}
    manifest = {"stability": {"<b>t</b>": entry}, "steps": ["attribute"], "plan": ["attribute"]}
    text = finding_html({"attribution": attr, "manifest": manifest})
    assert "unstable: the halves share 4 of their top 8" in text
    assert "<b>t</b>" not in text and "&lt;b&gt;t&lt;/b&gt;" in text and "atp&lt;i&gt;" in text
    assert "L0H0, L0H1, L1H0" in text
    assert "the ranking is <b>unstable</b>: the halves share" in text  # said once, in bold


def test_attribute_finding_gives_the_exact_check(pages):
    text = _section(build_report(pages["attr"]).read_text())
    manifest = json.loads((pages["attr"] / "manifest.json").read_text())
    verdict = manifest["verification"]["tiny_echo"]["verdict"]
    assert f"<td>{verdict}</td>" in text  # plain words: nothing in it to escape


def test_unfinished_run_warns():
    manifest = {"steps": ["attribute"], "plan": ["attribute", "sweep"]}
    attr = pd.DataFrame({"task": "t", "method": "atp", "layer": [0], "head": [0],
                         "label": ["L0H0"], "score": [1.0], "rank": [1]})  # fmt: skip
    text = finding_html({"attribution": attr, "manifest": manifest})
    assert "Warning: the run is incomplete (not run: sweep)." in text


def test_a_table_edited_past_reading_is_said_in_the_finding():
    summary = pd.DataFrame({"task": ["t"], "selection": ["TopK"], "k": ["<b>many</b>"],
                            "metric": ["accuracy"], "mean": [0.5]})  # fmt: skip
    text = finding_html({"summary": summary, "manifest": {}})
    assert "could not be read for a finding" in text and "<b>many" not in text
