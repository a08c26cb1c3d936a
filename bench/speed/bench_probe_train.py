"""The study's probe training step: torch's default AdamW against the fused one the probe uses.

The Cognitive Mirrors probe (``interp_heads.attribution.probe.HeadProbe``) on SmolLM2's shape: 270
heads, each head's 64-d ``hook_z`` projected to 64, concatenated (17,280) into an MLP of 512 and 4
labels: 8.8M parameters. The study trains it 100 epochs at batch 1 on 96 rows (9,600 steps), so the
optimizer's step dominates. Both optimizers train the same seeded probe on the same random rows,
interleaved, the order rotating each repeat; the report gives ms per step (median) and the largest
parameter difference after the steps (fused sums in another order: last-bit differences only).
No model is loaded. Writes bench/results/probe_train.json.

    .venv/bin/python -m bench.speed.bench_probe_train [--steps 48] [--repeats 3] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time

import torch
from torch import nn

from bench.common import pin_threads, result_path
from interp_heads.attribution.probe import HeadProbe, ProbeSettings


def train(x, y, steps: int, fused: bool) -> tuple[float, list[torch.Tensor]]:
    """Seconds per step of ``steps`` batch-1 steps, and the trained parameters."""
    s = ProbeSettings(epochs=1, batch_size=1, lr=1e-4)
    torch.manual_seed(0)
    probe = HeadProbe(x.shape[2], x.shape[1], 4, s)
    opt = torch.optim.AdamW(probe.parameters(), lr=s.lr, **({"fused": True} if fused else {}))
    loss_fn = nn.CrossEntropyLoss()
    probe.train()
    start = time.perf_counter()
    for i in range(steps):
        b = slice(i % len(x), i % len(x) + 1)
        opt.zero_grad()
        loss_fn(probe(x[b]), y[b]).backward()
        opt.step()
    return (time.perf_counter() - start) / steps, [p.detach().clone() for p in probe.parameters()]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=48)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    ap.add_argument("--out", default=str(result_path("probe_train.json")))
    args = ap.parse_args(argv)
    pin_threads(args.threads)
    gen = torch.Generator().manual_seed(0)
    x, y = torch.randn(96, 270, 64, generator=gen), torch.randint(0, 4, (96,), generator=gen)
    times: dict[str, list[float]] = {"default": [], "fused": []}
    params = {}
    for r in range(args.repeats):
        for name in ("default", "fused") if r % 2 == 0 else ("fused", "default"):
            t, params[name] = train(x, y, args.steps, name == "fused")
            times[name].append(t)
    diff = max(
        (a - b).abs().max().item() for a, b in zip(params["default"], params["fused"], strict=True)
    )
    ms = {k: statistics.median(v) * 1000 for k, v in times.items()}
    result = {
        "steps": args.steps,
        "repeats": args.repeats,
        "threads": torch.get_num_threads(),
        "ms_per_step": ms,
        "speedup": ms["default"] / ms["fused"],
        "study_minutes": {k: v * 9600 / 60000 for k, v in ms.items()},
        "max_param_difference": diff,
        "torch": torch.__version__,
        "machine": platform.machine(),
    }
    print(json.dumps(result, indent=1))
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
