"""This checkout's generation against an earlier commit's, conditions interleaved in one process.

One Cognitive Mirrors condition on the embedded SmolLM2, as ``bench_prompt_prefix`` runs it: the
study's prompt format (about 350 tokens), the ``]`` stop, 32 new tokens, the ``scale`` mask
(x 1e-4) on ``--k`` random heads at the last position, each condition started from the shared
prompt prefix. The baseline is the package of another checkout (``--baseline``, e.g. a
``git worktree add /tmp/base <commit>``), imported under another name, with its own model; the
two generate each condition in turn (baseline first, then this checkout, alternating the order
each condition), and the tokens must be equal. Writes bench/results/static_cache.json.

    git worktree add /tmp/base <commit>
    .venv/bin/python -m bench.speed.bench_static_cache --baseline /tmp/base [--n 16] [--threads 1]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import torch

from bench.common import ROOT, pin_threads, result_path, write_result

IMPORTS = re.compile(r"""(from |import |["']|f["'])interp_heads\b""")


def renamed_package(checkout: Path, name: str = "interp_heads_base") -> str:
    """Copy ``checkout``'s ``interp_heads`` to a temporary folder as ``name``; return the folder."""
    folder = Path(tempfile.mkdtemp(prefix="bench_base_"))
    target = folder / name
    shutil.copytree(checkout / "interp_heads", target)
    for path in target.rglob("*.py"):
        path.write_text(IMPORTS.sub(rf"\1{name}", path.read_text()))
    return str(folder)


def side(package: str):
    """One package's ``load_model``, ``generate_tokens``, ``PromptPrefixes`` and ``mask_heads``."""
    load = importlib.import_module(f"{package}.models.load")
    decode = importlib.import_module(f"{package}.generation.decode")
    prefix = importlib.import_module(f"{package}.generation.prefix")
    masks = importlib.import_module(f"{package}.interventions.masks")
    return load.load_model, decode.generate_tokens, prefix.PromptPrefixes, masks.mask_heads


@contextlib.contextmanager
def rows_kept(enabled: bool):
    """Inside: this checkout's caches refuse to drop rows (every row runs to the end)."""
    from interp_heads.generation.kv_cache import KVCache

    keep = KVCache.keep
    if enabled:
        KVCache.keep = lambda self, rows: False
    try:
        yield
    finally:
        KVCache.keep = keep


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", required=True, help="a checkout of the commit to compare with")
    ap.add_argument("--n", type=int, default=16, help="prompts (one batch of 16 by default)")
    ap.add_argument("--conditions", type=int, default=3)
    ap.add_argument("--k", type=int, default=32, help="masked heads (0: the unmasked model)")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument(
        "--keep-rows",
        action="store_true",
        help="also time this checkout with every row kept to the end (no row leaves its batch)",
    )
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    ap.add_argument("--task", default=str(ROOT / "data/cognitive_mirrors/retrieval.jsonl"))
    ap.add_argument("--out", default=str(result_path("static_cache.json")))
    args = ap.parse_args(argv)
    torch.set_grad_enabled(False)
    sys.path.insert(0, renamed_package(Path(args.baseline)))
    pin_threads(args.threads, ("interp_heads", "interp_heads_base"))
    from interp_heads.interventions.selections import RandomK
    from interp_heads.tasks import load_task
    from interp_heads.tasks.prompts import render

    sides = {"baseline": side("interp_heads_base"), "this": side("interp_heads")}
    models = {name: s[0]("smollm2-135m", device="cpu") for name, s in sides.items()}
    variants = list(sides) + (["this_rows_kept"] if args.keep_rows else [])
    of = {name: name if name in sides else "this" for name in variants}
    task = load_task(args.task).subset(n=args.n)
    prompts = render(models["this"], [e.prompt for e in task], fmt=task.fmt)
    lengths = [len(models["this"].to_tokens(p, prepend_bos=False)[0]) for p in prompts]
    gen = dict(max_new_tokens=32, batch_size=args.batch_size, stop_after="]", stop_at_newline=False)
    prefixes, build = {}, {}
    for name, (_, _, Prefixes, _) in sides.items():
        t = time.perf_counter()
        prefixes[name] = Prefixes(models[name], prompts, batch_size=args.batch_size)
        build[name] = round(time.perf_counter() - t, 2)
        print(f"prefix {name}: {build[name]} s", flush=True)
    seconds = {name: [] for name in variants}
    equal, loads = [], []
    model = models["this"]
    for seed in range(args.conditions):
        heads = (
            RandomK(model.cfg.n_layers, model.cfg.n_heads).select(args.k, seed) if args.k else []
        )
        order = variants[seed % len(variants) :] + variants[: seed % len(variants)]
        tokens = {}
        for name in order:
            _, generate_tokens, _, mask_heads = sides[of[name]]
            model_ = models[of[name]]
            masked = mask_heads(model_, heads, "scale", scale_factor=1e-4, positions="last")
            with masked if heads else contextlib.nullcontext(), rows_kept(name != of[name]):
                t = time.perf_counter()
                tokens[name] = generate_tokens(model_, prompts, prefixes=prefixes[of[name]], **gen)
                seconds[name].append(round(time.perf_counter() - t, 2))
        equal.append(all(tokens[name] == tokens["baseline"] for name in variants))
        loads.append(round(os.getloadavg()[0], 2))
        print(f"condition {seed}: " + ", ".join(f"{n} {seconds[n][-1]} s" for n in order)
              + f", tokens equal {equal[-1]}, load {loads[-1]}", flush=True)  # fmt: skip
    result = {
        "what": "one Cognitive Mirrors condition from the shared prefix: baseline vs this checkout",
        "baseline": str(args.baseline),
        "n_prompts": len(prompts),
        "prompt_tokens_mean": round(sum(lengths) / len(lengths), 1),
        "answer_tokens_mean": round(sum(len(r) for r in tokens["this"]) / len(prompts), 1),
        "conditions": args.conditions,
        "k": args.k,
        "batch_size": args.batch_size,
        "torch_threads": torch.get_num_threads(),
        "baseline_s": seconds["baseline"],
        "this_s": seconds["this"],
        "this_rows_kept_s": seconds.get("this_rows_kept"),
        "speedup_per_condition": round(sum(seconds["baseline"]) / sum(seconds["this"]), 2),
        "speedup_per_pair": [
            round(a / b, 2) for a, b in zip(seconds["baseline"], seconds["this"], strict=True)
        ],
        "prefix_build_s": build,
        "tokens_equal": all(equal),
        "cpu_count": os.cpu_count(),
        "load_avg_1min_per_condition": loads,
    }
    write_result(args.out, result)


if __name__ == "__main__":
    main()
