"""Time the README's "In Python" example on SmolLM2, as a new user runs it (run by hand).

Each run is a fresh ``python`` process executing the code block read from ``README.md``
(``interp_heads.testing.readme``), timed from the process start to its end, so interpreter
start, imports and model loading are included:

- ``cold``: an empty ``$INTERP_HEADS_CACHE``: the embedded GGUF is de-quantised and converted
  first, as on a first run after installing;
- ``warm``: the converted weights cached (every later run).

Writes ``bench/results/readme_example.json`` with the wall seconds, the process's CPU seconds
(user + system, all threads), the example's printed lines, the core count and the load average
when it started. The development machine is shared: under a high load average the wall time
grows while the CPU seconds stay about the same, so on an idle 2-core machine the wall time is
roughly between half the CPU seconds (both cores busy) and all of them.

    python -m bench.speed.bench_readme_example            # cold, then warm
    python -m bench.speed.bench_readme_example --warm     # warm only (uses $INTERP_HEADS_CACHE)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

from bench.common import ROOT, result_path
from interp_heads.testing.readme import readme_example


def once(cache: str | None) -> dict:
    """One fresh process running the example; its wall time and what it printed."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), TOKENIZERS_PARALLELISM="false")
    if cache is not None:
        env["INTERP_HEADS_CACHE"] = cache
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", readme_example()],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=tempfile.gettempdir(),
    )
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "seconds": round(seconds, 1),
        "cpu_seconds": round(cpu, 1),
        "load_avg_1min_at_start": load,
        "stdout": out.stdout,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warm", action="store_true", help="only the warm run (current cache)")
    args = parser.parse_args(argv)
    result = {"cpu_count": os.cpu_count(), "date": time.strftime("%Y-%m-%d %H:%M")}
    if args.warm:
        result["warm"] = once(None)
    else:
        with tempfile.TemporaryDirectory() as cache:
            result["cold"] = once(cache)
            result["warm"] = once(cache)
    path = result_path("readme_example.json")
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
