"""The four built-in tasks in the Cognitive Mirrors prompt format (``data/cognitive_mirrors/``).

    python -m interp_heads.tasks.cm_builder [--out data/cognitive_mirrors] [-n 160]

Each built-in example becomes one sub-question of a CogQA-style item, its prompt the study's
template (``tasks.cognitive_mirrors``): the main question, the prior knowledge the study's
``cot_prompt`` would give it, and the sub-question. As in CogQA, the facts a reasoning step
reads from the main question come first as Retrieval sub-questions, which the study turns into
prior knowledge:

- ``retrieval``: main question = the context and its question; sub-question = the question
  ("What is the code word?"); the item's first sub-question, so no prior knowledge;
- ``knowledge_recall``: main question = sub-question = the question; no prior knowledge;
- ``math_calculation``: "What is 5 plus 1?" after the Retrieval sub-questions "What is the first
  number to add?" (5) and "What is the second number to add?" (1);
- ``inference``: "Who is faster?" after the Retrieval sub-question "What does the question say
  about Will and Henry?" ("Will is slower than Henry.").

Ids, answers, aliases, distractors and per-row facts are the built-in ones (the corrupted prompts
are left out: the study's protocol ranks by a probe and has none). Each file declares the format
in its header line, so any command runs it in the study's format.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
from pathlib import Path

from interp_heads.store.atomic import write_atomic
from interp_heads.tasks.cognitive_mirrors import RETRIEVAL, prior_knowledge, study_prompt
from interp_heads.tasks.io import dumps_example, load_task
from interp_heads.tasks.schema import BUILTIN_TASKS, TASK_TITLES, Example

N_EXAMPLES = 160  # configs/cognitive_mirrors.toml reads at most 160 examples per task
FMT = "cognitive_mirrors"
_PLUS = re.compile(r"^What is (-?\d+) plus (-?\d+)\?$")
_COMPARE = re.compile(r"^(.+?) is (\w+) than (.+?)\. (Who is \w+\?)$")


def default_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "data" / "cognitive_mirrors"


def _parts(task: str, ex: Example) -> tuple[str, list[tuple[str, str, str]], str]:
    """``(main question, earlier Retrieval sub-questions, sub-question)`` of one example."""
    q = ex.question
    if task == "retrieval":
        context, _, sub = q.rpartition(". ")
        if not context:
            raise ValueError(f"retrieval row {ex.id!r}: no context before the question")
        return q, [], sub
    if task == "math_calculation":
        a, b = _match(_PLUS, q, ex).groups()
        return q, [
            ("What is the first number to add?", a, RETRIEVAL),
            ("What is the second number to add?", b, RETRIEVAL),
        ], q  # fmt: skip
    if task == "inference":
        x, _, y, sub = _match(_COMPARE, q, ex).groups()
        fact = q[: -len(sub)].strip()
        return q, [(f"What does the question say about {x} and {y}?", fact, RETRIEVAL)], sub
    return q, [], q


def _match(pattern: re.Pattern, question: str, ex: Example) -> re.Match:
    m = pattern.match(question)
    if m is None:
        raise ValueError(f"row {ex.id!r}: question {question!r} does not match {pattern.pattern}")
    return m


def convert(task: str, ex: Example) -> Example:
    """One built-in example as a sub-question in the study's template."""
    main, earlier, sub = _parts(task, ex)
    prompt = study_prompt(main, prior_knowledge(earlier, first=not earlier), sub)
    return dataclasses.replace(
        ex,
        prompt=prompt,
        question=sub,
        corrupted_prompt=None,
        corrupted_answer=None,
        meta={**ex.meta, "skill": TASK_TITLES[task]},
    )


def build(out: str | Path | None = None, n: int = N_EXAMPLES) -> dict[str, Path]:
    """Write the four tasks' files (header line declaring the format, then ``n`` rows each)."""
    folder = Path(out) if out is not None else default_dir()
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name in BUILTIN_TASKS:
        rows = [convert(name, ex) for ex in load_task(name).examples[:n]]
        header = {"fmt": FMT, "description": f"{name} in the Cognitive Mirrors prompt format"}
        text = json.dumps(header) + "\n" + "".join(dumps_example(ex) + "\n" for ex in rows)
        path = folder / f"{name}.jsonl"
        write_atomic(path, text)  # UTF-8, "\n" line ends; never through a link at path
        paths[name] = path
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", default=None, help="output folder (default: data/cognitive_mirrors)"
    )
    parser.add_argument("-n", type=int, default=N_EXAMPLES, help="examples per task")
    args = parser.parse_args(argv)
    for name, path in build(args.out, args.n).items():
        print(f"{name}: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
