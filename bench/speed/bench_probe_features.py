"""The probe's features at position ``generated`` (the Cognitive Mirrors study's): read while the
unmasked model generates, against the way before, a second forward pass over each prompt and its
generated answer.

Both ways greedily answer ``--n`` prompts of the study's format on the embedded SmolLM2 (batch
``--batch-size``, the ``]`` stop, 32 new tokens) and take each head's ``z`` where up to five answer
tokens were fed back (``attribution.probe_features.answer_positions``). The way now reads the
prompts' pass from ``generation.prefix.shared_prefixes`` (made anew in each repeat). The second
pass is the toolkit's before: the prompt and the answer up to its last chosen token, left-padded,
one pass per batch averaged over the chosen tokens (``probe_features._batch_features``, the pass
position ``answer`` still makes). Repeats alternate the order. Reported: the seconds of each way
and the largest difference of a feature (an answer that differed would move its positions, and
its feature far more than float noise).

Writes bench/results/probe_features.json.

    .venv/bin/python -m bench.speed.bench_probe_features [--n 48] [--repeats 2] [--threads 2]
"""

from __future__ import annotations

import os
import time

import torch

from bench.common import ROOT, study_parser, study_setup, write_result
from interp_heads.attribution import probe_features as pf
from interp_heads.generation.decode import generate_tokens
from interp_heads.generation.prefix import release_prefixes
from interp_heads.tasks.cognitive_mirrors import STOP_TOKEN


def second_pass(model, texts, batch_size: int, max_new_tokens: int):
    """``[prompt, layer, head, d_head]`` and the answers: generate, then one more forward pass."""
    gens = generate_tokens(
        model, texts, max_new_tokens, batch_size=batch_size, stop_after=STOP_TOKEN
    )
    rows, n_chosen = [], []
    for text, gen in zip(texts, gens, strict=True):
        row = model.to_tokens(text, move_to_device=False)[0]
        pos = pf.answer_positions(model, list(gen))
        tail = torch.tensor(gen[: pos[-1] + 1] if pos else [], dtype=torch.long)
        rows.append(torch.cat([row, tail]))
        n_chosen.append(len(pos) or 1)
    feats = [  # the toolkit's pass then: z averaged over each row's last n_chosen positions
        pf._batch_features(model, rows[s : s + batch_size], n_chosen[s : s + batch_size], "answer")
        for s in range(0, len(rows), batch_size)
    ]
    return torch.cat(feats), gens


def during_generation(model, texts, batch_size: int, max_new_tokens: int):
    return pf._generated_features(model, texts, "cognitive_mirrors", max_new_tokens, batch_size)


def main(argv=None) -> None:
    ap = study_parser(
        __doc__, "probe_features.json", 48, "prompts (a compare task's evaluated rows)"
    )
    ap.add_argument("--batch-size", type=int, default=48)
    ap.add_argument("--repeats", type=int, default=2)
    args, model, texts = study_setup(ap, argv)
    ways = {"second pass (before)": second_pass, "read during generation": during_generation}
    seconds = {w: [] for w in ways}
    outs = {}
    names = list(ways)
    for r in range(args.repeats):
        for w in names[r % 2 :] + names[: r % 2]:
            release_prefixes(model)  # each way makes its own prompt pass
            t = time.perf_counter()
            outs[w] = ways[w](model, texts, args.batch_size, 32)
            seconds[w].append(round(time.perf_counter() - t, 2))
    ref, gens = outs[names[0]]
    new = outs[names[1]]
    diff = (new - ref).abs()
    result = {
        "what": "the probe's features at position generated: a second forward pass vs read "
        "during the generation",
        "task": os.path.relpath(args.task, ROOT),
        "n_prompts": len(texts),
        "batch_size": args.batch_size,
        "threads": args.threads,
        "seconds": seconds,
        "best_s": {w: min(s) for w, s in seconds.items()},
        "max_abs_feature_diff": float(diff.max()),
        "max_rel_feature_diff": float((diff / ref.abs().clamp_min(1e-3)).max()),
        "feature_rms": float(ref.pow(2).mean().sqrt()),
        "answer_tokens_mean": round(sum(map(len, gens)) / len(gens), 1),
        "load_avg_1min_at_end": round(os.getloadavg()[0], 2),
    }
    write_result(args.out, result)


if __name__ == "__main__":
    main()
