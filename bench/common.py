"""What the bench scripts share: where results live, and the small pieces two or more scripts use
(the synthetic city task, the random-weight family checkpoints against HF, writing a table
between a doc's markers).

The scripts run from the repository root as modules (``python -m bench.speed.bench_sweep``), so
this module is imported as ``bench.common``. Model-side imports stay inside the functions: the
scripts that read only JSON or run folders (``checks/compare_runs.py``) do not load torch.
"""

from __future__ import annotations

import random
import re
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
# prompts and new tokens of the families checks (both backends)
FAMILY_PROMPTS = ["Hello there, my", "The cat sat on the", "a b", "Once upon a time, in"]
FAMILY_NEW_TOKENS = 16

# the synthetic city task of the attribution bench
NAMES = ["Anna", "Ben", "Carl", "Dana", "Emma", "Frank", "Grace", "Henry"]
CITIES = ["Paris", "Rome", "Tokyo", "Cairo", "Lima", "Oslo", "Berlin", "Madrid"]


def result_path(name: str) -> Path:
    """``bench/results/<name>``: where a script writes (and reads back) its JSON."""
    return RESULTS / name


def write_result(path, result: dict) -> None:
    """Write a benchmark's ``result`` as indented JSON to ``path`` and print it."""
    import json

    text = json.dumps(result, indent=1)
    Path(path).write_text(text + "\n")
    print(text)


def replace_between_markers(doc: Path, marker: str, text: str) -> None:
    """Put ``text`` between ``<!-- marker -->`` and ``<!-- /marker -->`` in ``doc``."""
    pattern = rf"(<!-- {marker} -->\n).*?(<!-- /{marker} -->)"
    new = re.sub(pattern, lambda m: m.group(1) + text + m.group(2), doc.read_text(), flags=re.S)
    doc.write_text(new)


def bench_task(n: int = 8, seed: int = 0):
    """``n`` examples: seven name-city facts, then a question about one name (corrupted: another)."""
    from interp_heads.tasks.schema import Example, Task

    rng = random.Random(seed)
    examples = []
    for i in range(n):
        names, cities = rng.sample(NAMES, 7), rng.sample(CITIES, 7)
        facts = "Facts: " + " ".join(
            f"{a} lives in {c}." for a, c in zip(names, cities, strict=True)
        )
        q, r = rng.sample(range(7), 2)

        def prompt(j, facts=facts, names=names):
            return f"{facts} Question: where does {names[j]} live? Answer: {names[j]} lives in"

        examples.append(
            Example(
                f"b{i}",
                "bench",
                prompt(q),
                cities[q],
                corrupted_prompt=prompt(r),
                corrupted_answer=cities[r],
            )
        )
    return Task("bench", examples)


def token_share(a, b) -> float:
    """The share of positions where two batches of token rows agree."""
    pairs = [(x, y) for ra, rb in zip(a, b, strict=True) for x, y in zip(ra, rb, strict=True)]
    return sum(x == y for x, y in pairs) / len(pairs)


def family_checkpoint(spec):
    """A tiny random checkpoint of ``spec`` saved to a temporary folder, and HF's eager model of it."""
    from transformers import AutoModelForCausalLM

    folder = spec.save(Path(tempfile.mkdtemp(prefix=spec.name)))
    return folder, AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()


def logits_vs_hf(model, hf):
    """``(tokens, mask, ours, hf_logits)`` on the family prompts, left-padded, HF given the
    position ids the padding implies."""
    from interp_heads.generation.decode import tokenize_left_padded

    tokens, mask = tokenize_left_padded(model, FAMILY_PROMPTS)
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    ours = model(tokens, attention_mask=mask)
    ref = hf(tokens, attention_mask=mask, position_ids=pos).logits
    return tokens, mask, ours, ref


def pin_threads(n: int, packages=("interp_heads",)) -> None:
    """torch on ``n`` threads for the whole script (0: torch's default): the packages' shared
    thread count (``models.threads``, which lowers a process's threads when the load average is
    high and re-checks every 2 s) is switched off, so every side of a comparison runs on the
    same threads whatever else ran a minute before."""
    import importlib

    import torch

    if not n:
        return
    torch.set_num_threads(n)
    for package in packages:
        try:
            shared = importlib.import_module(f"{package}.models.threads")
        except ImportError:
            continue
        for name in ("configure", "rebalance", "watch"):
            if hasattr(shared, name):
                setattr(shared, name, lambda *args, **kwargs: None)


STUDY_TASK = ROOT / "data/cognitive_mirrors/retrieval.jsonl"  # the study's format, ~350 tokens


def study_parser(doc: str, result: str, n: int, n_help: str):
    """A study benchmark's parser: ``--n`` prompts of ``--task`` (the study's retrieval file),
    ``--threads`` (2) and ``--out`` (``bench/results/<result>``); each adds its own options."""
    import argparse

    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--n", type=int, default=n, help=n_help)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--task", default=str(STUDY_TASK))
    ap.add_argument("--out", default=str(result_path(result)))
    return ap


def study_setup(ap, argv):
    """``ap``'s arguments, torch pinned to their threads, the embedded SmolLM2 and the first
    ``--n`` prompts of ``--task``: ``(args, model, prompts)``."""
    args = ap.parse_args(argv)
    pin_threads(args.threads)
    model, prompts = study_prompts(args.task, args.n)
    return args, model, prompts


def study_prompts(task: str | Path = STUDY_TASK, n: int = 24, backend: str = "hooked"):
    """The embedded SmolLM2 on the CPU (gradients off; ``backend``: ``bridge`` in the tl4
    environment) and the first ``n`` prompts of ``task`` rendered in its own format (the
    Cognitive Mirrors study's, for the default file)."""
    import torch

    from interp_heads.models.load import load_model
    from interp_heads.tasks import load_task
    from interp_heads.tasks.prompts import render

    torch.set_grad_enabled(False)
    model = load_model("smollm2-135m", device="cpu", backend=backend)
    rows = load_task(str(task)).subset(n=n)
    return model, render(model, [e.prompt for e in rows], fmt=rows.fmt)
