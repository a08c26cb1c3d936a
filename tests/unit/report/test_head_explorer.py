"""The attribute page's head explorer: fed from the run folder, linked to the heatmap (a click
on a cell in headless Chromium selects that head), every head's attention stored small."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from interp_heads.report import build_report
from tests.helpers import DATA, chromium, cli, headless

CLICK = """<script>window.addEventListener('load',function(){setTimeout(function(){
var gd=document.getElementById('fig-heatmap_tiny_echo');
gd.emit('plotly_click',{points:[{customdata:['L1H3',2]}]});
var rows=[];document.querySelectorAll('#ihx-page-0 .ihx-info tr').forEach(function(r){
 rows.push([r.children[0].textContent,r.children[1].textContent]);});
var n=document.querySelectorAll('#ihx-page-0 .ihx-att table').length;
var pre=document.createElement('pre');pre.id='ih-check';pre.textContent=JSON.stringify({rows:rows,n:n});
document.body.appendChild(pre);},500);});</script>"""


@pytest.fixture(scope="module")
def attr(tmp_path_factory):
    root = tmp_path_factory.mktemp("explorer")
    argv = ["--model", "tiny", "--task", str(DATA / "tiny_echo.jsonl"), "--no-filter", "--quiet"]
    assert cli("attribute", *argv, "--n-examples", 6, "--out", root / "attr") == 0
    return root / "attr"


def test_every_head_has_a_small_attention_record(attr):
    data = json.loads((attr / "attention.json").read_text())["tiny_echo"]
    explore = data["explore"]
    assert len(explore["heads"]) == 3 * 4 and len(explore["prompts"]) == 2  # tiny: 3 x 4 heads
    for big, small in zip(data["prompts"], explore["prompts"], strict=False):
        head = data["heads"][0]  # a top head is in both: the short record is the long one's end
        n = len(small["tokens"])
        want = [[round(x, 3) for x in row[-n:]] for row in big["patterns"][head][-n:]]
        assert all(x == 0 for i, row in enumerate(want) for x in row[i + 1 :])  # causal
        want = [row[: i + 1] for i, row in enumerate(want)]  # stored up to the diagonal
        assert small["patterns"][head] == want and small["tokens"] == big["tokens"][-n:]


def test_a_click_on_the_heatmap_shows_the_head(attr):
    if chromium() is None:
        pytest.skip("no Chromium installed: the page cannot be rendered here")
    page = build_report(attr).read_text()
    assert page.index('id="fig-heatmap_tiny_echo"') < page.index('id="ihx-page-0"')
    assert "cdn" not in page.lower()  # offline: plotly.js beside the page, the explorer has none
    check = attr / "check.html"
    check.write_text(page.replace("</body>", CLICK + "</body>"))
    dom = headless(chromium(), "--window-size=1400,900", "--virtual-time-budget=5000",
                   "--dump-dom", check.resolve().as_uri()).stdout  # fmt: skip
    got = json.loads(re.search(r'<pre id="ih-check">([^<]*)</pre>', dom).group(1))
    card = dict(got["rows"])
    assert card["head"] == "L1H3"
    ranking = pd.read_csv(attr / "ranking.csv")
    rank = int(ranking[ranking.label == "L1H3"]["rank"].iloc[0])
    assert card["rank"] == f"{rank} of 12 by atp (abs)"
    known = pd.read_csv(attr / "known_heads.csv")
    induction = known[(known.label == "L1H3") & (known.kind == "induction")].score.iloc[0]
    assert f"induction {induction:.3g}" in card["known kinds"]
    entry = json.loads((attr / "attribution" / "tiny_echo.json").read_text())["provenance"]
    ver = {
        r["head"]: r["exact"]
        for r in entry["verification"]["top"] + entry["verification"]["sample"]
    }
    assert card["exact single-head ablation"].startswith(f"drop of log p(answer) {ver['L1H3']:.4f}")
    assert "95% CI [" in card["score (atp)"] and "over 6 examples" in card["score (atp)"]
    assert card["stability of the task's ranking"].startswith("too few examples to decide")
    assert got["n"] == 2  # its attention on both stored prompts
