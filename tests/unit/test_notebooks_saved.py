"""The notebooks as committed: the README's entry points, no hidden warnings, outputs saved.

Reading the ``.ipynb`` files is instant; executing them is ``tests/integration/
test_notebooks.py`` (slow tier). ``python notebooks/execute.py`` rewrites their outputs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))


def _code_cells(path: Path) -> list[dict]:
    return [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]


def test_there_are_notebooks():
    assert {p.stem for p in NOTEBOOKS} >= {"quickstart", "seed_figure"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_uses_the_public_api_and_hides_no_warning(path):
    source = "\n".join("".join(c["source"]) for c in _code_cells(path))
    assert "from interp_heads import " in source
    for hidden in ("simplefilter", "filterwarnings", "catch_warnings", "pipeline.experiment"):
        assert hidden not in source, hidden
    assert "filter_correct(" in source  # ranks (and evaluates) correctly answered examples


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_saved_executed_with_an_offline_figure(path):
    cells = _code_cells(path)
    assert all(c["execution_count"] for c in cells)  # every cell ran, top to bottom
    assert [c["execution_count"] for c in cells] == list(range(1, len(cells) + 1))
    outputs = [o for c in cells for o in c["outputs"]]
    assert not [o for o in outputs if o["output_type"] == "error"]
    text = "".join("".join(o.get("text", "")) for o in outputs if o["output_type"] == "stream")
    assert "IProgress not found" not in text and "TqdmWarning" not in text
    html = ["".join(o.get("data", {}).get("text/html", "")) for o in outputs]
    figures = [h for h in html if "Plotly.newPlot" in h]
    assert figures, "no figure saved"
    # plotly.js itself inline (its licence banner opens the bundle) in the first figure only, no CDN
    assert "plotly.js v" in figures[0]
    assert not [h for h in figures[1:] if "plotly.js v" in h]
    assert not [h for h in figures if 'src="https://cdn.plot.ly' in h]
