"""The run report: rebuilt from saved files only, self-contained, renders offline in headless Chromium."""

from __future__ import annotations

import json
import shutil
import warnings

import pandas as pd
import pytest

from interp_heads.pipeline.experiment import RunConfig, run_pipeline
from interp_heads.report import build_report, load_run
from tests.helpers import DATA, chromium, headless


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A tiny run with two tasks (so the overlap heatmap is drawn)."""
    root = tmp_path_factory.mktemp("report")
    rows = [json.loads(line) for line in (DATA / "tiny_echo.jsonl").read_text().splitlines()]
    second = root / "tiny_echo2.jsonl"
    second.write_text("".join(json.dumps({**r, "task": "tiny_echo2"}) + "\n" for r in rows[::-1]))
    cfg = RunConfig.from_toml(DATA / "tiny.toml").changed(
        {"tasks": [str(DATA / "tiny_echo.jsonl"), str(second)], "n_eval": 4}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_pipeline(cfg, root / "run", quiet=True)
    return root / "run"


def test_report_is_rebuilt_from_saved_files_only(run_dir, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(
        run_dir,
        copy,
        ignore=shutil.ignore_patterns("index.html", "figures", "conditions", "attribution"),
    )
    index = build_report(copy)
    page = index.read_text()
    # plotly.js once, from the figures folder beside the page (not inlined: the page stays small)
    assert page.count("src='figures/plotly.min.js'") == 1 and "cdn.plot.ly" not in page
    assert len(page) < 300_000 and page.count("<script") == page.count("</script>")
    from plotly.offline import get_plotlyjs

    assert get_plotlyjs()[:2000] not in page  # nothing of plotly.js inline
    assert (copy / "figures" / "plotly.min.js").read_text() == get_plotlyjs()
    for div in (
        "fig-seed_figure",
        "fig-heatmap_tiny_echo",
        "fig-heatmap_tiny_echo2",
        "fig-overlap",
    ):
        assert f'id="{div}"' in page
    for heading in (
        "Cognitive Mirrors figure",
        "TopK vs RandomK at each k",
        "Baseline",
        "Example generations",
        "Provenance",
    ):
        assert heading in page
    assert {p.name for p in (copy / "figures").iterdir()} >= {
        "seed_figure.html",
        "overlap.html",
        "plotly.min.js",
    }


def test_report_tables_and_partial_runs(run_dir, tmp_path):
    run = load_run(run_dir)
    assert set(run["summary"].task) == {"tiny_echo", "tiny_echo2"}
    assert len(run["generations"]) == 2 * 4 * 16
    assert {"answer", "question", "generation"} <= set(run["generations"].columns)
    only = tmp_path / "only_attr"
    only.mkdir()
    shutil.copy(run_dir / "attribution.parquet", only)
    page = build_report(only).read_text()
    assert "fig-heatmap_tiny_echo" in page  # only the sections the folder has
    assert (
        "Cognitive Mirrors figure" not in page
        and "No sweep" not in page
        and "No baseline" not in page
    )
    summary = pd.read_csv(run_dir / "summary.csv")
    assert {"mean", "ci_low", "ci_high", "baseline", "drop"} <= set(summary.columns)


@pytest.mark.skipif(
    chromium() is None, reason="chromium is not installed (apt-get install -y chromium)"
)
def test_report_renders_offline_in_headless_chromium(run_dir, tmp_path):
    browser = chromium()
    url = (run_dir / "index.html").resolve().as_uri()
    dom = headless(browser, "--virtual-time-budget=10000", "--dump-dom", url).stdout
    # plotly drew every figure (Cognitive Mirrors figure, 2 heatmaps, overlap) and their traces
    assert dom.count('class="plot-container plotly"') == 4, dom[:500]
    assert dom.count('class="hm"') == 3  # 2 head heatmaps + the overlap heatmap
    assert dom.count('class="trace scatter') >= 2 * 3 * 2  # 2 panels x 3 selections x 2 metrics
    assert "Layer-matched RandomK" in dom and "Jaccard" in dom
    shot = tmp_path / "report.png"
    headless(
        browser,
        "--virtual-time-budget=10000",
        f"--screenshot={shot}",
        "--window-size=1400,2000",
        url,
    )
    assert shot.exists() and shot.stat().st_size > 50_000  # a blank page is a few kB


def test_haystack_breakdown_figure():
    import pandas as pd

    from interp_heads.figures.curves import breakdown_table, plot_breakdown

    rows, gens = [], []
    for i in range(12):
        ex = f"e{i}"
        gens.append(
            {
                "task": "retrieval",
                "example_id": ex,
                "n_sentences": 3 if i < 6 else 21,
                "depth": (i % 3) / 2,
            }
        )
        rows.append(("baseline", 0, 0, ex, 1.0))
        rows.append(("TopK", 32, 0, ex, float(i < 6)))  # short haystacks survive TopK
        for seed in range(2):
            rows.append(("RandomK", 32, seed, ex, 1.0))
    records = pd.DataFrame(rows, columns=["selection", "k", "seed", "example_id", "value"]).assign(
        task="retrieval", metric="accuracy"
    )
    table = breakdown_table(records, pd.DataFrame(gens), "retrieval", 32)
    top = table[table.panel == "TopK k=32"].set_index(["n_sentences", "depth"])["mean"]
    assert top[(3, 0.0)] == 1.0 and top[(21, 0.5)] == 0.0
    assert int(table[table.panel == "RandomK k=32"]["count"].sum()) == 24
    fig = plot_breakdown(table)
    assert len(fig.data) == 3 and [a.text for a in fig.layout.annotations] == [
        "unmasked",
        "TopK k=32",
        "RandomK k=32",
    ]
