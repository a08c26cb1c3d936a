"""Execute the notebooks in place, so they ship with their outputs (``make notebooks``).

Each runs top to bottom in a fresh kernel with nbclient (as ``tests/integration/test_notebooks.py``
does, at full size here), offline, in a temporary working folder; the outputs are written back
into the ``.ipynb`` file. A few minutes on two CPU cores.

    python notebooks/execute.py                      # every notebook
    python notebooks/execute.py notebooks/quickstart.ipynb
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def execute(path: Path, timeout: int = 1200) -> float:
    """Run ``path`` in a fresh kernel and save it with its outputs; the seconds it took."""
    import nbclient
    import nbformat

    for key, value in (("HF_HUB_OFFLINE", "1"), ("TRANSFORMERS_OFFLINE", "1")):
        os.environ.setdefault(key, value)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.pop("INTERP_HEADS_NOTEBOOK_QUICK", None)
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as work:
        client = nbclient.NotebookClient(
            nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": work}}
        )
        client.execute()
    nbformat.write(nb, path)
    return time.perf_counter() - start


def main(argv: list[str]) -> None:
    paths = [Path(p) for p in argv] or sorted(HERE.glob("*.ipynb"))
    for path in paths:
        print(f"{path.name}: {execute(path):.0f} s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
