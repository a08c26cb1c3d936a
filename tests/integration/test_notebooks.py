"""Execute the notebooks end to end (quick sizes, the embedded SmolLM2) with nbclient, and once
at full size to check the committed outputs are what the code prints today (warnings included).

``tests/unit/test_notebooks_saved.py`` checks the committed copies (outputs saved, no warning
filters, the README's entry points); ``python notebooks/execute.py`` rewrites those outputs.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path, monkeypatch, tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("INTERP_HEADS_NOTEBOOK_QUICK", "1")
    for key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "TOKENIZERS_PARALLELISM"):
        monkeypatch.setenv(
            key, os.environ.get(key, "1" if key != "TOKENIZERS_PARALLELISM" else "false")
        )
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    streams = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    assert "IProgress not found" not in streams  # ipywidgets (dev extra): tqdm draws a widget
    assert any(
        "application/vnd.plotly.v1+json" in o.get("data", {}) or "text/html" in o.get("data", {})
        for o in outputs
    )
    if path.stem == "quickstart":  # a HeadScores ending a cell shows its table (``_repr_html_``)
        html = [str(o.get("data", {}).get("text/html", "")) for o in outputs]
        assert any("HeadScores:" in h and "<table" in h for h in html)


def _printed(cells) -> list[list[tuple[str, str]]]:
    """What each code cell printed: its streams (stdout, stderr: warnings are there) and the
    plain text of its results, in order; progress widgets left out (their text is a clock).
    Numbers in stderr lines are masked, each run of digits as one ``#``: a warning's wording is
    compared, not a bar's rate or the kernel's process id (its digit count varies by machine)."""
    out = []
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        shown = []
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            if o.get("output_type") == "stream":
                text = "".join(o.get("text", ""))
                if o.get("name") == "stderr":
                    text = re.sub(r"\d+", "#", text)
                shown.append((o["name"], text))
            elif "application/vnd.jupyter.widget-view+json" not in data and "text/plain" in data:
                shown.append((o.get("output_type"), "".join(data["text/plain"])))
        out.append(shown)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_saved_outputs_are_what_the_code_prints_today(path, monkeypatch, tmp_path):
    """The committed outputs are the ones a fresh run at full size (``notebooks/execute.py``)
    prints now, warnings included: a new warning, a changed table or a changed line fails here
    until ``python notebooks/execute.py`` saves the notebook again."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.delenv("INTERP_HEADS_NOTEBOOK_QUICK", raising=False)  # execute.py's full size
    for key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.setenv(key, os.environ.get(key, "1"))
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", os.environ.get("TOKENIZERS_PARALLELISM", "false"))
    saved = nbformat.read(path, as_version=4)
    fresh = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        fresh, timeout=1200, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    for i, (was, now) in enumerate(zip(_printed(saved.cells), _printed(fresh.cells), strict=True)):
        assert was == now, f"{path.name}, code cell {i + 1}: saved {was!r}, printed today {now!r}"
