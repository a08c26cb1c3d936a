"""The README's "In Python" example as code: run on the tiny model by a test, timed by a benchmark.

Both read the code from ``README.md`` itself, so the example a reader copies is the one that is
tested and timed (``tests/unit/test_readme_example.py``, ``bench/speed/bench_readme_example.py``).
"""

from __future__ import annotations

from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_example(readme: str | Path = README) -> str:
    """The first ``python`` code block under the README's "## In Python" heading."""
    text = Path(readme).read_text()
    _, found, section = text.partition("## In Python")
    if not found or "```python\n" not in section:
        raise ValueError(f"{readme}: no python block under '## In Python'")
    return section.split("```python\n", 1)[1].split("\n```", 1)[0] + "\n"
