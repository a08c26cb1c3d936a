"""Ray executor overhead: the same run, local vs ``--executor ray``, wall time and equal tables.

Runs ``interp-heads run --config CONFIG`` in fresh processes, first locally, then with
``--executor ray --n-workers N`` (a local Ray instance is started and stopped by the run, so its
startup and the actors' model loading are counted), ``--repeats`` times each, alternating. Checks
that every Ray run's tables and generations equal the local run's
(``interp_heads.testing.tiny.assert_matches_golden``) and prints the wall times, the sweep phase times
from ``manifest.json`` and the ratio ray / local. Writes bench/results/executor_<device>.json.
Run it on a quiet machine (nothing else on the cores).

    .venv/bin/python -m bench.speed.bench_executor [--config configs/quick.toml] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import ROOT, result_path


def run(config: str, out: Path, extra: list[str]) -> tuple[float, dict]:
    cmd = [sys.executable, "-m", "interp_heads.cli", "run", "--config", config, "--out", str(out)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env.pop("RAY_ADDRESS", None)
    t0 = time.perf_counter()
    subprocess.run([*cmd, "--quiet", *extra], check=True, cwd=ROOT, env=env, capture_output=True)
    wall = time.perf_counter() - t0
    return wall, json.loads((out / "manifest.json").read_text())["timings"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="configs/quick.toml")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument(
        "--threads",
        type=int,
        default=2,
        help="driver torch threads in every run (else the fair share drops with the load average)",
    )
    ap.add_argument(
        "--out", default=None, help="JSON path (default bench/results/executor_<device>.json)"
    )
    args = ap.parse_args()
    from interp_heads.testing.tiny import assert_matches_golden, save_golden

    runs: dict[str, list] = {"local": [], "ray": []}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for r in range(args.repeats):
            for name, extra in (
                ("local", ["--executor", "local"]),
                ("ray", ["--executor", "ray", "--n-workers", str(args.workers)]),
            ):
                extra += ["--threads", str(args.threads)]
                out = tmp / f"{name}{r}"
                wall, timings = run(args.config, out, extra)
                runs[name].append(
                    {
                        "wall_s": wall,
                        "sweep_s": timings["sweep"],
                        "load_avg_after": os.getloadavg()[0],
                        "timings": timings,
                    }
                )
                print(f"{name} #{r}: wall {wall:.1f} s, sweep {timings['sweep']:.1f} s", flush=True)
        save_golden(tmp / "local0", tmp / "golden")
        for r in range(args.repeats):
            assert_matches_golden(tmp / f"local{r}", tmp / "golden")
            assert_matches_golden(tmp / f"ray{r}", tmp / "golden")
    med = {
        n: {k: statistics.median(x[k] for x in v) for k in ("wall_s", "sweep_s")}
        for n, v in runs.items()
    }
    result = {
        "config": args.config,
        "workers": args.workers,
        "machine": platform.platform(),
        "cores": os.cpu_count(),
        "median": med,
        "ratio_wall": med["ray"]["wall_s"] / med["local"]["wall_s"],
        "ratio_sweep": med["ray"]["sweep_s"] / med["local"]["sweep_s"],
        "tables_equal": True,
        "runs": runs,
    }
    out = Path(args.out or result_path(f"executor_{args.device}.json"))
    out.write_text(json.dumps(result, indent=1))
    print(
        f"local {med['local']['wall_s']:.1f} s, ray ({args.workers} workers) {med['ray']['wall_s']:.1f} s: "
        f"ratio {result['ratio_wall']:.2f} (sweep phase {med['local']['sweep_s']:.1f} s vs "
        f"{med['ray']['sweep_s']:.1f} s: {result['ratio_sweep']:.2f}); tables equal"
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
