"""``interp_heads.studies.seed_figure`` (docs/results.md): it keeps the sections ``make heads`` and
``make sufficiency`` write, words verdicts at small n, links its static figures and splits one run's two k grids."""

from __future__ import annotations

from pathlib import Path

import pytest

from interp_heads.studies import seed_figure
from tests.helpers import DATA


def _make_results():
    return seed_figure


@pytest.mark.parametrize("name", ["heads", "sufficiency"])
def test_section_is_appended_after_the_notes_replaced_and_read_back(name):
    mr = _make_results()
    begin, end = mr.SECTIONS[name]
    block = f"{begin}\n## Which heads\n| k | 8 |\n{end}"
    page = "# Results\n\n| table |\n\n## Reading the results (hand-written)\n\n- note\n"
    first = mr.with_section(page, name, block)
    assert first.index("## Reading the results") < first.index("## Which heads")
    assert mr.section(first, name) == block
    newer = block.replace("| k | 8 |", "| k | 32 |")
    second = mr.with_section(first, name, newer)
    assert mr.section(second, name) == newer and second.count(begin) == 1
    assert mr.section("no section here", name) == ""
    assert mr.with_section("# Results\n", name, block).endswith(block + "\n")
    other = next(n for n in mr.SECTIONS if n != name)
    assert mr.section(second, other) == ""


def _run(tmp_path: Path) -> Path:
    """A tiny run folder (``run --config tests/data/tiny.toml``)."""
    import warnings

    from interp_heads.cli import main

    data = DATA
    cfg = tmp_path / "c.toml"
    cfg.write_text((data / "tiny.toml").read_text().replace("tests/data/", f"{data}/"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["run", "--config", str(cfg), "--out", str(tmp_path / "run"), "--quiet"]) == 0
    return tmp_path / "run"


def test_claim_rows_say_too_few_and_never_print_an_infinite_ratio():
    import pandas as pd

    mr = _make_results()
    rows = [dict(task="t", selection=sel, k=32, metric="accuracy", mean=m, ci_low=m - 0.05,
                 ci_high=m + 0.05) for sel, m in (("TopK", 0.0), ("RandomK", 1.0))]  # fmt: skip
    sig = dict(task="t", k=32, metric="accuracy", control="RandomK", baseline=1.0, top_drop=1.0,
               control_drop=0.0, diff=-1.0, diff_low=-1.0, diff_high=-1.0, p_value=0.0005,
               significant=True, drop_ratio=float("inf"), n_draws=2)  # fmt: skip
    run = {"summary": pd.DataFrame(rows), "sig": pd.DataFrame([dict(sig, n_examples=7)])}
    (row,) = mr.claim_rows(run, 32)
    assert row["claim holds"].startswith("undecided (n = 7")
    assert (
        row["ratio"] == "1.00 vs 0.00 (3x: yes)"
        and "p" not in row["TopK - RandomK [95% CI], p"][-8:]
    )
    run["sig"] = pd.DataFrame([dict(sig, n_examples=60, n_draws=5)])
    (row,) = mr.claim_rows(run, 32)
    assert row["claim holds"] == "yes" and row["TopK - RandomK [95% CI], p"].endswith(
        "p < 0.001, Holm p < 0.001"
    )
    run["sig"] = pd.DataFrame([dict(sig, n_examples=60, n_draws=5, p_value=0.001)])
    (row,) = mr.claim_rows(run, 32)
    assert row["TopK - RandomK [95% CI], p"].endswith(", p = 0.001, Holm p = 0.001")


def test_results_page_links_its_static_figures(tmp_path):
    import importlib.util as util
    import shutil

    if util.find_spec("kaleido") is None or not shutil.which("chromium"):
        import pytest

        pytest.skip("needs kaleido and a Chromium")
    run = _run(tmp_path)
    out, figs = tmp_path / "docs" / "results.md", tmp_path / "docs" / "figures"
    notes = tmp_path / "notes.md"
    notes.write_text("## Reading the results\n\n- a note\n")
    _make_results().write_page(run, run, out, notes, figs)  # two folders: default and scaled
    page = out.read_text()
    claim, reading = page.index("## The Cognitive Mirrors"), page.index("## Reading the results")
    assert claim < reading < page.index("## Setup")  # the answer, its reading, then the tables
    for name in ("results_literal_k.svg", "results_scaled_k.svg"):
        assert f"](figures/{name})" in page  # relative to the page: it renders where it lies
        svg = (figs / name).read_text()
        assert svg.lstrip().startswith("<svg") and len(svg) < 300_000  # small enough to commit
    assert "runs/demo/index.html` for the interactive page" not in page


def test_one_run_with_both_k_grids_gives_each_its_tables():
    """``make demo`` is one run with ``ks`` and ``scaled_ks``: the literal grid's view holds its
    k only, the scaled grid's the model's fractions (4, 8 of 270 heads here), both the unmasked."""
    import pandas as pd

    manifest = {
        "config": {"ks": [16, 32], "scaled_ks": [0.015625, 0.03125]},
        "model": {"n_layers": 30, "n_heads": 9},
        "ks": [4, 8, 16, 32],
    }
    ks = [0, 4, 8, 16, 32]
    frame = pd.DataFrame({"k": ks, "task": "t", "selection": "TopK"})
    run = {"manifest": manifest, "summary": frame, "sig": frame}
    literal, scaled = seed_figure.grid_views(run)
    assert sorted(literal["summary"].k) == [0, 16, 32] and literal["manifest"]["ks"] == [16, 32]
    assert sorted(scaled["summary"].k) == [0, 4, 8] and scaled["manifest"]["ks"] == [4, 8]
    one = {**run, "manifest": {**manifest, "config": {"ks": [16, 32]}}}
    assert seed_figure.grid_views(one) == (one, None)


def test_run_time_sums_the_invocations_of_a_resumed_run():
    from interp_heads.studies.seed_figure.tables import run_time

    first = {"total": 1409.0, "sweep": 1102.0}
    resumed = {"timings": {"total": 37.0, "sweep": 31.0}, "earlier_timings": [first]}
    assert run_time(resumed) == "24.1 min (sweep 18.9 min), over 2 invocations (resumed)"
    assert run_time({"timings": first}) == "23.5 min (sweep 18.4 min)"
    assert run_time({}) == "not timed"
