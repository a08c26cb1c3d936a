"""Static images of every figure (SVG, PDF, PNG) for papers: written by ``report --static``
through kaleido and the machine's Chromium, listed as the tool's files; clear errors otherwise."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys

import plotly.graph_objects as go
import pytest

from interp_heads.errors import InputError
from interp_heads.figures.static import StaticExportError, parse_formats, write_static
from tests.helpers import DATA, cli

BROWSER = (
    shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
)
CAN_EXPORT = importlib.util.find_spec("kaleido") is not None and BROWSER is not None


def test_formats_are_checked():
    assert parse_formats("svg, PNG,.pdf,svg") == ["svg", "png", "pdf"]
    for bad in ("gif", "", "svg,jpg"):
        with pytest.raises(InputError, match="choose from svg, pdf, png"):
            parse_formats(bad)


def test_bad_format_on_the_command_line_is_one_line_exit_2(tmp_path, capsys):
    assert cli("report", tmp_path, "--static", "svg,gif") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "static formats gif" in err


def test_without_kaleido_the_error_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "kaleido", None)  # import kaleido -> ImportError
    with pytest.raises(StaticExportError, match="need kaleido"):
        write_static({"f": go.Figure()}, tmp_path, ["svg"])
    assert not list(tmp_path.iterdir())


@pytest.mark.skipif(not CAN_EXPORT, reason="needs kaleido and a Chrome/Chromium")
def test_report_static_writes_every_figure(tmp_path):
    out = tmp_path / "run"
    cfg = (DATA / "tiny.toml").read_text().replace("tests/data/", f"{DATA}/")
    (tmp_path / "c.toml").write_text(cfg)
    assert cli("run", "--config", tmp_path / "c.toml", "--out", out, "--quiet") == 0
    assert cli("report", out, "--static", "svg,png") == 0
    figures = out / "figures"
    names = sorted(p.stem for p in figures.glob("*.html"))
    assert names and sorted(p.stem for p in figures.glob("*.svg")) == names
    assert sorted(p.stem for p in figures.glob("*.png")) == names
    for name in names:
        svg = (figures / f"{name}.svg").read_text()
        assert svg.lstrip().startswith("<svg")
        assert (figures / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(figures.glob(".*tmp*"))  # no temporary file left
    listed = json.loads((out / "manifest.json").read_text())["files"]["outputs"]
    assert any(
        p.endswith("seed_figure.svg") for p in listed
    )  # the tool's: a --force rerun retires it


def test_static_figures_keep_their_layout_size(tmp_path):
    import re

    if importlib.util.find_spec("kaleido") is None or not shutil.which("chromium"):
        pytest.skip("needs kaleido and a Chromium")
    sized = go.Figure(go.Scatter(x=[1, 2], y=[1, 2]), layout={"width": 1360, "height": 760})
    plain = go.Figure(go.Scatter(x=[1, 2], y=[1, 2]))
    paths = write_static({"sized": sized, "plain": plain}, tmp_path, ["svg"])
    sizes = [re.search(r'width="(\d+)" height="(\d+)"', p.read_text()).groups() for p in paths]
    assert sizes == [("1360", "760"), ("700", "500")]  # its own size, else plotly's default


def test_static_export_never_writes_through_a_planted_temporary_link(monkeypatch, tmp_path):
    """kaleido is replaced by a writer of the paths it is given: the export's temporary files are
    the tool's own new files, so a link planted under a temporary name keeps its target."""
    import os
    from pathlib import Path

    import plotly.graph_objects as go
    import plotly.io as pio

    from interp_heads.figures.static import write_static

    def fake_write_images(figs, paths, **kwargs):
        for path in paths:
            with open(path, "w") as fh:
                fh.write("<svg/>")

    monkeypatch.setitem(sys.modules, "kaleido", object())
    monkeypatch.setattr(pio, "write_images", fake_write_images)
    outside = tmp_path / "outside.svg"
    outside.write_text("keep")
    folder = tmp_path / "figures"
    folder.mkdir()
    (folder / f".fig.tmp{os.getpid()}.svg").symlink_to(outside)
    written = write_static({"fig": go.Figure()}, folder, ["svg"])
    assert outside.read_text() == "keep"
    assert [Path(p).read_text() for p in written] == ["<svg/>"]
    assert not (folder / "fig.svg").is_symlink()
