"""The sweep's check that a task's biggest mask changes the logits (``sweep.checks``), as it was
and as it is, interleaved in one process.

As it was (written out here): the task's first 4 prompts, the unembedding at every position. As
it is (``checks._mask_has_effect``): the task's shortest prompt, the last position unembedded.
Two cases, 32 seeded random heads: the study's retrieval prompts (~350 tokens) with the ``scale``
mask (x 1e-4) at the generated positions, and the built-in retrieval task's plain prompts with
the ``mean`` mask at every position. Both sides must find the mask's effect. Writes
bench/results/mask_check.json.

    .venv/bin/python -m bench.speed.bench_mask_check [--repeats 3] [--threads 2]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import torch

from bench.common import pin_threads, result_path, study_prompts, write_result


def first_four_every_position(model, prompts, heads, kind, values, positions) -> bool:
    """The check as it was: the first 4 prompts, logits unembedded at every position."""
    from interp_heads.generation.decode import tokenize_left_padded
    from interp_heads.generation.kv_cache import KVCache
    from interp_heads.interventions.masks import mask_heads

    tokens, mask = tokenize_left_padded(model, prompts[:4])

    def next_logits():
        if positions != "generated":
            return model(tokens, attention_mask=mask)[:, -1]
        cache = KVCache(model, tokens.shape[0])
        nxt = cache.step(tokens, mask, mask).argmax(-1, keepdim=True)
        one = torch.ones_like(nxt)
        return cache.step(nxt, one, torch.cat([mask, one], dim=1))

    with torch.inference_mode():
        base = next_logits()
        with mask_heads(model, heads, kind, values=values, positions=positions):
            masked = next_logits()
    return not torch.allclose(base, masked)


def main(argv=None) -> None:
    from interp_heads.interventions.kinds.base import get_kind
    from interp_heads.interventions.means import head_means
    from interp_heads.sweep.checks import _mask_has_effect
    from interp_heads.tasks import load_task
    from interp_heads.tasks.prompts import render

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    ap.add_argument("--out", default=str(result_path("mask_check.json")))
    args = ap.parse_args(argv)
    pin_threads(args.threads)
    model, study = study_prompts(n=48)
    plain = render(model, [e.prompt for e in load_task("retrieval").subset(n=48)], fmt="plain")
    heads = random.Random(0).sample([(la, h) for la in range(30) for h in range(9)], 32)
    cases = {
        "study retrieval, scale x 1e-4, generated": (study, get_kind("scale", scale_factor=1e-4), None, "generated"),
        "plain retrieval, mean, all": (plain, get_kind("mean"), head_means(model, plain), "all"),
    }  # fmt: skip
    sides = {"as it was": first_four_every_position, "as it is": _mask_has_effect}
    result = {"repeats": args.repeats, "threads": torch.get_num_threads(), "seconds": {}}
    for label, (prompts, kind, values, positions) in cases.items():
        times: dict[str, list[float]] = {name: [] for name in sides}
        for r in range(args.repeats):
            for name in sides if r % 2 == 0 else reversed(sides):
                start = time.perf_counter()
                found = sides[name](model, prompts, heads, kind, values, positions)
                times[name].append(time.perf_counter() - start)
                assert found, f"{name}: the mask changed no logits ({label})"
        result["seconds"][label] = {k: statistics.median(v) for k, v in times.items()}
    write_result(args.out, result)


if __name__ == "__main__":
    main()
