"""Leading tokens every prompt shares, read once per batch (``generation.shared_start``), against
every row read whole: seconds per condition and whether every row's tokens are the same.

Masks at every position share no prompt prefix across conditions, but within a condition every
row of a batch starts with the same tokens when the prompts share a header. Two cases, each
condition run both ways, alternating, ``--repeats`` times (the faster kept):

- ``study``: the first ``--n`` prompts of the Cognitive Mirrors format (66 shared tokens of about
  363) in one batch of ``--n``, as the specification curve's cells that mask at every position
  generate them (``configs/cognitive_mirrors.toml``: 32 new tokens, the ``]`` stop; ``scale``
  x 1e-4 on ``--k`` random heads), and unmasked;
- ``chat``: ``--chat-n`` prompts of each built-in task rendered with SmolLM2's chat template (its
  system prompt is the shared part) at batch 32, 6 new tokens with the first-line stop, ``--k``
  random heads mean-ablated at every position, as `make demo` masks them.

Writes bench/results/shared_start.json.

    .venv/bin/python -m bench.speed.bench_shared_start --threads 2
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from unittest import mock

from bench.common import study_parser, study_setup, write_result
from interp_heads.generation import shared_start
from interp_heads.generation.decode import batches, generate_tokens
from interp_heads.generation.shared_start import shared_lead
from interp_heads.interventions.masks import mask_heads
from interp_heads.interventions.means import head_means
from interp_heads.interventions.selections import RandomK

WAYS = ("whole", "shared")
CHAT_TASKS = ("retrieval", "knowledge_recall", "math_calculation", "inference")


def run(model, prompts, way: str, heads, mask_kw: dict, gen: dict):
    """One condition's tokens and seconds, read whole (the shared start switched off) or not."""
    least = 10**9 if way == "whole" else shared_start.SHARED_START_MIN
    with mock.patch.object(shared_start, "SHARED_START_MIN", least):
        with mask_heads(model, heads, **mask_kw) if heads else nullcontext():
            start = time.perf_counter()
            toks = generate_tokens(model, prompts, **gen)
            return toks, time.perf_counter() - start


def compare(model, prompts, conditions: dict, mask_kw: dict, gen: dict, repeats: int) -> dict:
    """Each condition both ways, alternating within each repeat."""
    made = batches(model, prompts, gen["batch_size"], None)
    out = {"rows": len(prompts), "leads": [shared_lead(t, m) for _, t, m in made]}
    for label, heads in conditions.items():
        times: dict[str, list[float]] = {w: [] for w in WAYS}
        toks = {}
        for r in range(repeats):
            for way in WAYS[r % 2 :] + WAYS[: r % 2]:
                toks[way], seconds = run(model, prompts, way, heads, mask_kw, gen)
                times[way].append(round(seconds, 3))
        best = {w: min(t) for w, t in times.items()}
        out[label] = {
            "s": best, "all_s": times,
            "same_rows": sum(a == b for a, b in zip(toks["whole"], toks["shared"], strict=True)),
            "speedup": round(best["whole"] / best["shared"], 3),
        }  # fmt: skip
        print(label, out[label], flush=True)
    return out


def chat_prompts(model, name: str, n: int) -> list[str]:
    from interp_heads.tasks import load_task
    from interp_heads.tasks.prompts import render

    return render(model, [e.prompt for e in load_task(name).subset(n=n)], "chat")


def main(argv=None) -> None:
    ap = study_parser(__doc__, "shared_start.json", 48, "study prompts, one batch (the study's 48)")
    ap.add_argument("--k", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--chat-n", type=int, default=60)
    args, model, prompts = study_setup(ap, argv)
    cfg = model.cfg
    heads = RandomK(cfg.n_layers, cfg.n_heads).select(args.k, 0)
    result = {"settings": {"n": args.n, "k": args.k, "repeats": args.repeats,
                           "threads": args.threads, "chat_n": args.chat_n}}  # fmt: skip
    study_gen = dict(max_new_tokens=32, batch_size=args.n, stop_after="]", stop_at_newline=False)
    result["study"] = compare(
        model, prompts, {f"k{args.k}": heads, "unmasked": []},
        {"kind": "scale", "scale_factor": 1e-4}, study_gen, args.repeats,
    )  # fmt: skip
    chat_gen = dict(max_new_tokens=6, batch_size=32, stop_at_newline=True)
    for name in CHAT_TASKS:
        chat = chat_prompts(model, name, args.chat_n)
        means = head_means(model, chat)
        print(name, flush=True)
        result[f"chat_{name}"] = compare(
            model, chat, {"k16": heads[:16]}, {"kind": "mean", "values": means}, chat_gen,
            args.repeats,
        )  # fmt: skip
    write_result(args.out, result)


if __name__ == "__main__":
    main()
