"""docs/make_results.py keeps the section docs/make_heads.py writes into docs/results.md."""

from __future__ import annotations

import importlib.util
from pathlib import Path

DOCS = Path(__file__).parents[2] / "docs"


def _make_results():
    spec = importlib.util.spec_from_file_location("make_results", DOCS / "make_results.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_heads_block_is_inserted_before_the_notes_replaced_and_read_back():
    mr = _make_results()
    block = f"{mr.HEADS_BEGIN}\n## Which heads\n| k | 8 |\n{mr.HEADS_END}"
    page = "# Results\n\n| table |\n\n## Reading the results (hand-written)\n\n- note\n"
    first = mr.with_heads_block(page, block)
    assert first.index("## Which heads") < first.index("## Reading the results")
    assert mr.heads_block(first) == block
    newer = block.replace("| k | 8 |", "| k | 32 |")
    second = mr.with_heads_block(first, newer)
    assert mr.heads_block(second) == newer and second.count(mr.HEADS_BEGIN) == 1
    assert mr.heads_block("no section here") == ""
    assert mr.with_heads_block("# Results\n", block).endswith(block + "\n")
