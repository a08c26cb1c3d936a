"""The study's probe training step: torch's default AdamW, the fused one, and the fused one with
denormal floats flushed to 0, set in the calling thread (whose intra-op workers started before
and keep their mode) or in a new thread that starts its own (``attribution.probe.flushed_thread``,
what the probe's training runs).

The Cognitive Mirrors probe (``interp_heads.attribution.probe.HeadProbe``) on SmolLM2's shape: 270
heads, each head's ``hook_z`` feature with its layer's mean (128-d, the study's ``layer_bias``)
projected to 64, concatenated (17,280) into an MLP of 512 and 4 labels: 8.8M parameters. The study
trains it 100 epochs at batch 1 on 96 rows (9,600 steps), so the step dominates. The rows are random
at std ``--scale`` (0.01: Adam's moments reach the denormal range after about 600 steps; at std
0.27, SmolLM2's ``hook_z`` scale, they did not within 1,200 steps, though on the study's own
features they do), and each process first starts torch's thread pool, as a run has before its probe.
Each way trains the same seeded probe on the same rows in a fresh process of its own (the
floating-point mode is per thread and inherited), the ways interleaved and their order rotating each
repeat. The report gives ms per step (the median over repeats of each run's mean), the study's
minutes at that rate, the largest parameter difference between the default and fused optimizers
(fused sums in another order: last-bit differences only), and whether each later way's parameters
are bitwise the fused way's. No model is loaded. Writes bench/results/probe_train.json.

    .venv/bin/python -m bench.speed.bench_probe_train [--steps 1200] [--repeats 2] [--threads 2]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch import nn

from bench.common import pin_threads, result_path, write_result

WAYS = ("default", "fused", "flushed_caller", "flushed_thread")


def train(steps: int, way: str, out: str, scale: float) -> float:
    """Seconds per step of ``steps`` batch-1 steps; the trained parameters saved to ``out``."""
    from interp_heads.attribution.probe import flushed_thread

    torch.randn(1024, 1024).matmul(torch.randn(1024, 1024))  # the workers start, as in a run
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(96, 270, 128, generator=gen) * scale
    y = torch.randint(0, 4, (96,), generator=gen)
    if way.endswith("thread"):
        return flushed_thread(lambda: _steps(x, y, steps, way, out))
    if way.endswith("caller"):
        torch.set_flush_denormal(True)  # this process ends after the steps
    return _steps(x, y, steps, way, out)


def _steps(x, y, steps: int, way: str, out: str) -> float:
    from interp_heads.attribution.probe import HeadProbe, ProbeSettings

    s = ProbeSettings(epochs=1, batch_size=1, lr=1e-4)
    torch.manual_seed(0)
    probe = HeadProbe(x.shape[2], x.shape[1], 4, s)
    fused = {"fused": True} if way != "default" else {}
    opt = torch.optim.AdamW(probe.parameters(), lr=s.lr, **fused)
    loss_fn = nn.CrossEntropyLoss()
    probe.train()
    start = time.perf_counter()
    for i in range(steps):
        b = slice(i % len(x), i % len(x) + 1)
        opt.zero_grad()
        loss_fn(probe(x[b]), y[b]).backward()
        opt.step()
    seconds = (time.perf_counter() - start) / steps
    torch.save([p.detach() for p in probe.parameters()], out)
    return seconds


def _one(way: str, args, out: Path) -> float:
    cmd = [sys.executable, "-m", "bench.speed.bench_probe_train", "--way", way, "--steps"]
    cmd += [str(args.steps), "--threads", str(args.threads), "--params", str(out)]
    cmd += ["--scale", str(args.scale)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1200)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--scale", type=float, default=0.01, help="the random rows' std")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    ap.add_argument("--out", default=str(result_path("probe_train.json")))
    ap.add_argument("--way", choices=WAYS, help=argparse.SUPPRESS)  # a child process: one way
    ap.add_argument("--params", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    pin_threads(args.threads)
    if args.way:
        print(train(args.steps, args.way, args.params, args.scale))
        return
    times: dict[str, list[float]] = {w: [] for w in WAYS}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeats):
            for way in WAYS[r % len(WAYS) :] + WAYS[: r % len(WAYS)]:
                times[way].append(_one(way, args, Path(tmp) / f"{way}.pt"))
        params = {w: torch.load(Path(tmp) / f"{w}.pt") for w in WAYS}
    pairs = zip(params["default"], params["fused"], strict=True)
    diff = max((a - b).abs().max().item() for a, b in pairs)
    same = {
        w: all(torch.equal(a, b) for a, b in zip(params["fused"], params[w], strict=True))
        for w in WAYS[2:]
    }
    ms = {k: statistics.median(v) * 1000 for k, v in times.items()}
    result = {
        "steps": args.steps,
        "scale": args.scale,
        "repeats": args.repeats,
        "threads": args.threads or torch.get_num_threads(),
        "ms_per_step": ms,
        "ms_each_repeat": {k: [round(t * 1000, 2) for t in v] for k, v in times.items()},
        "speedup_vs_default": {k: ms["default"] / v for k, v in ms.items()},
        "study_minutes": {k: v * 9600 / 60000 for k, v in ms.items()},
        "max_param_difference_default_fused": diff,
        "params_bitwise_fused": same,
        "torch": torch.__version__,
        "machine": platform.machine(),
    }
    write_result(args.out, result)


if __name__ == "__main__":
    main()
