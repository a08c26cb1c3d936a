"""Generate the four built-in task files, reproducibly, from templates and ``facts.py``.

``python -m interp_heads.tasks.builder [--out data/tasks]`` rewrites
``{retrieval,knowledge_recall,math_calculation,inference,retrieval_keyed}.jsonl``; the same seed gives
byte-identical files. No model or tokenizer is needed: every corrupted prompt swaps single-token
words (see ``facts.py``) so it keeps the clean prompt's token length, and clean and corrupted
answers start with different characters, so their first tokens differ.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable
from pathlib import Path

from interp_heads.tasks import facts, haystack
from interp_heads.tasks.io import data_dir, save_task
from interp_heads.tasks.schema import BUILTIN_TASKS, EXTRA_TASKS, Example, Task

SEED = 0
N_EXAMPLES = 320
# Keyed retrieval is harder (baseline ~0.27 on SmolLM2-135M): more rows so that >= 150 survive
# filtering to correctly answered ones.
N_EXAMPLES_BY_TASK = {"retrieval_keyed": 640}

# prompt, question, answer, aliases, c_prompt, c_answer[, distractors, meta]
Row = tuple


def _distinct_initials(rng: random.Random, pool, k: int) -> list[str]:
    """``k`` words of ``pool`` whose first letters all differ."""
    while True:
        words = rng.sample(list(pool), k)
        if len({w[0].lower() for w in words}) == k:
            return words


# --------------------------------------------------------------------------- retrieval
# Needle in a haystack: one needle sentence ("The secret word is kite.") at a chosen depth of a
# varied filler text, then the needle's opening again; the model must copy the needle's value.
# Values are single tokens (with and without a leading space), so the corrupted prompt (another
# value in the same place) has the same token length and a different first answer token.
NEEDLE_KEYS = ("secret word", "magic word", "password", "code word")
HAYSTACK_SENTENCES = (3, 5, 8, 12, 17)  # about 40 to 210 tokens with the needle and the query
NEEDLE_DEPTHS = (0.0, 0.25, 0.5, 0.75, 1.0)


def _retrieval(rng: random.Random) -> Row:
    n = rng.choice(HAYSTACK_SENTENCES)
    depth = rng.choice(NEEDLE_DEPTHS)
    key = rng.choice(NEEDLE_KEYS)
    value, cvalue = _distinct_initials(rng, facts.OBJECTS, 2)
    filler = haystack.haystack(rng, n)

    def prompt(v: str) -> str:
        text = " ".join(haystack.insert_at_depth(filler, [f"The {key} is {v}."], [depth]))
        return f"{text} The {key} is"

    text = " ".join(haystack.insert_at_depth(filler, [f"The {key} is {value}."], [depth]))
    question = f"{text} What is the {key}?"
    meta = {"n_sentences": n, "depth": depth, "context_words": len(prompt(value).split())}
    return prompt(value), question, value, (), prompt(cvalue), cvalue, (), meta


# Keyed needles ("Anna lives in Oslo."): three in one haystack; the query names one key and the
# other two values are distractors. Harder: the model must bind a key to its value.
KEYED_NEEDLES = 3


def _retrieval_keyed(rng: random.Random) -> Row:
    n = rng.choice(HAYSTACK_SENTENCES)
    names = rng.sample(facts.NAMES, KEYED_NEEDLES)
    cities = _distinct_initials(rng, facts.CITIES, KEYED_NEEDLES)
    depths = sorted(rng.sample(NEEDLE_DEPTHS, KEYED_NEEDLES))
    needles = [f"{a} lives in {c}." for a, c in zip(names, cities, strict=True)]
    text = " ".join(haystack.insert_at_depth(haystack.haystack(rng, n), needles, depths))
    q, cq = rng.sample(range(KEYED_NEEDLES), 2)
    others = tuple(c for i, c in enumerate(cities) if i != q)
    meta = {"n_sentences": n, "depth": depths[q], "context_words": len(text.split()) + 3}
    return (
        f"{text} {names[q]} lives in",
        f"{text} Where does {names[q]} live?",
        cities[q],
        (),
        f"{text} {names[cq]} lives in",
        cities[cq],
        others,
        meta,
    )


# --------------------------------------------------------------------------- knowledge recall
KNOWLEDGE_TEMPLATES = (
    ("capital", "The capital of {c} is"),
    ("capital", "The capital city of {c} is"),
    ("capital", "The capital of {c} is called"),
    ("language", "The official language of {c} is"),
    ("language", "The main language of {c} is"),
    ("language", "The national language of {c} is"),
)
KNOWLEDGE_QUESTIONS = {
    "capital": "What is the capital of {c}?",
    "language": "What is the official language of {c}?",
}


def _knowledge(rng: random.Random) -> Row:
    kind, template = rng.choice(KNOWLEDGE_TEMPLATES)
    col = 0 if kind == "capital" else 1
    pool = facts.WELL_KNOWN_CAPITALS if kind == "capital" else list(facts.COUNTRIES)
    while True:
        a, b = rng.sample(pool, 2)
        ans, cans = facts.COUNTRIES[a][col], facts.COUNTRIES[b][col]
        if ans[0] != cans[0]:
            break
    aliases = facts.COUNTRIES[a][2] if kind == "capital" else ()
    question = KNOWLEDGE_QUESTIONS[kind].format(c=a)
    return template.format(c=a), question, ans, aliases, template.format(c=b), cans


# --------------------------------------------------------------------------- math
# Two worked examples of the same operation, then the item; the prompt ends with "= " because
# the tokenizer writes " 12" as " " + "1" + "2", so the model's next token is the first digit.
MATH_OPS = ("+",)


def _math_operands(rng: random.Random, op: str) -> tuple[int, int]:
    return rng.randint(1, 9), rng.randint(1, 9)


def _math_value(a: int, op: str, b: int) -> int:
    return a + b


def _math(rng: random.Random) -> Row:
    op = rng.choice(MATH_OPS)
    shots = [_math_operands(rng, op) for _ in range(2)]
    while True:  # corrupted: first operand with as many digits, answer starts with another digit
        a, b = _math_operands(rng, op)
        ca = _math_operands(rng, op)[0]
        if str(_math_value(a, op, b))[0] != str(_math_value(ca, op, b))[0]:
            break
    head = "".join(f"{x} {op} {y} = {_math_value(x, op, y)}\n" for x, y in shots)

    def prompt(x: int) -> str:
        return f"{head}{x} {op} {b} = "

    question = f"What is {a} plus {b}?"
    return (
        prompt(a),
        question,
        str(_math_value(a, op, b)),
        (),
        prompt(ca),
        str(_math_value(ca, op, b)),
    )


# --------------------------------------------------------------------------- inference
# Converse comparatives: "X is taller than Y. Who is shorter?" -> Y. One worked example first.
RELATIONS = (
    ("taller", "shorter"),
    ("older", "younger"),
    ("faster", "slower"),
    ("heavier", "lighter"),
)
INFERENCE_DIRECTIONS = ("forward", "reverse")


def _inference(rng: random.Random) -> Row:
    s1, s2 = rng.sample(facts.NAMES, 2)
    x, y = _distinct_initials(rng, [n for n in facts.NAMES if n not in (s1, s2)], 2)
    more, less = rng.choice(RELATIONS)
    shot_more, shot_less = rng.choice(RELATIONS)
    shot = f"Q: {s1} is {shot_more} than {s2}. Who is {shot_less}?\nA: {s2}\n"
    said, asked = (more, less) if rng.choice(INFERENCE_DIRECTIONS) == "forward" else (less, more)

    def item(p: str, q: str) -> str:
        return f"{p} is {said} than {q}. Who is {asked}?"

    return (
        f"{shot}Q: {item(x, y)}\nA:",
        item(x, y),
        y,
        (),
        f"{shot}Q: {item(y, x)}\nA:",
        x,
        (x,),  # naming the other person (or both) is wrong
        {},
    )


GENERATORS: dict[str, Callable[[random.Random], Row]] = {
    "retrieval": _retrieval,
    "knowledge_recall": _knowledge,
    "math_calculation": _math,
    "inference": _inference,
    "retrieval_keyed": _retrieval_keyed,
}


def build_task(name: str, n: int = N_EXAMPLES, seed: int = SEED) -> Task:
    """``n`` distinct examples of built-in task ``name`` (deterministic for a given seed)."""
    if name not in GENERATORS:
        raise ValueError(
            f"unknown built-in task {name!r}; expected one of {BUILTIN_TASKS + EXTRA_TASKS}"
        )
    rng = random.Random(f"{seed}:{name}")
    gen = GENERATORS[name]
    examples, seen = [], set()
    attempts = 0
    while len(examples) < n:
        attempts += 1
        if attempts > 100 * n:
            raise RuntimeError(f"{name}: could not draw {n} distinct examples")
        prompt, question, answer, aliases, cprompt, canswer, *rest = gen(rng)
        distractors, meta = rest if rest else ((), {})
        if prompt in seen:
            continue
        seen.add(prompt)
        examples.append(
            Example(
                id=f"{name}-{len(examples):04d}",
                task=name,
                prompt=prompt,
                question=question,
                answer=answer,
                aliases=tuple(aliases),
                corrupted_prompt=cprompt,
                corrupted_answer=canswer,
                distractors=tuple(distractors),
                meta=dict(meta),
            )
        )
    return Task(name, examples, source="interp_heads.tasks.builder", meta={"seed": seed})


def build_all(
    out: str | Path | None = None, seed: int = SEED, n: int = N_EXAMPLES
) -> dict[str, Path]:
    """Write every built-in task to ``out`` (default: the built-in data folder)."""
    out = Path(out) if out is not None else data_dir()
    return {
        name: save_task(
            build_task(name, N_EXAMPLES_BY_TASK.get(name, n) if n == N_EXAMPLES else n, seed),
            out / f"{name}.jsonl",
        )
        for name in BUILTIN_TASKS + EXTRA_TASKS
    }


class _Parser(argparse.ArgumentParser):
    """argparse whose error is the CLI's one line (``interp-heads: error: ...``, exit 2)."""

    def error(self, message):
        self.exit(2, f"interp-heads: error: {message} (see {self.prog} --help)\n")


def main(argv: list[str] | None = None) -> int:
    """``interp-heads tasks build [--out DIR] [--seed N] [-n N]``; a bad flag is one error line."""
    parser = _Parser(prog="interp-heads tasks build", description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="output folder (default: data/tasks)")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("-n", type=int, default=N_EXAMPLES, help="examples per task")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, or the one error line already printed
        return int(exc.code or 0)
    for name, path in build_all(args.out, args.seed, args.n).items():
        print(f"{name}: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
