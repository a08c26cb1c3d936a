"""Execute the notebooks end to end (quick sizes, the embedded SmolLM2) with nbclient.

``tests/unit/test_notebooks_saved.py`` checks the committed copies (outputs saved, no warning
filters, the README's entry points); ``python notebooks/execute.py`` rewrites those outputs.
"""

from __future__ import annotations

import os
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
