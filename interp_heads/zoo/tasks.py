"""The zoo's tasks: prompts of single characters (one byte token each) whose answer a known
mechanism computes, each with a corrupted prompt of the same length and another answer.

Every prompt ends with a space (the query position; ``attribution.inputs.answer_token`` takes the
answer's own first byte after a prompt ending in whitespace) and every prompt of a task has the
same length, so no batch is padded. The mechanisms the literature knows:

- ``induction``: 12 distinct letters, then a copy of the letter at a random position ``p``; the
  answer is the letter at ``p + 1`` (a previous-token head composed with an induction head,
  Elhage et al. 2021, Olsson et al. 2022).
- ``successor``: 8 random letters with one digit ``d`` among them; the answer is ``d + 1``
  (mod 10): a head that attends to the digit and whose OV circuit maps a token to its successor
  (successor heads, Gould et al. 2023).
- ``ioi``: lowercase filler with two names (capitals), the subject ``S`` and the indirect object
  ``IO`` in random order, then ``S`` again; the answer is ``IO``, ``S`` the distractor (duplicate
  token, S-inhibition and name-mover heads, Wang et al. 2023).
- ``two_hop``: three pairs ``xy.`` with a chain ``a -> b``, ``b -> c`` and an unrelated pair,
  then the query ``a``; the answer is ``c``: two lookups, the second's query made by the first
  (composed heads on top of a previous-token head).

A recipe may add *drills*: training-only sequences with a target at several positions (dense
supervision), so that a mechanism a last-position loss finds too slowly forms within the training
budget. The held-out accuracy is still the task's own last-position answer on task prompts.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from dataclasses import dataclass

from interp_heads.errors import InputError
from interp_heads.tasks.schema import Example, Task

LETTERS = string.ascii_lowercase
NAMES = string.ascii_uppercase
DIGITS = string.digits


@dataclass(frozen=True)
class Item:
    """One prompt with its answer, a corrupted prompt of the same length and its answer, and the
    wrong candidates the prompt holds."""

    prompt: str
    answer: str
    corrupted: str
    corrupted_answer: str
    distractors: tuple[str, ...] = ()


def _induction(rng: random.Random) -> Item:
    seq = rng.sample(LETTERS, 12)
    p, q = rng.sample(range(11), 2)  # the clean and the corrupted query's positions
    body = "".join(seq)
    return Item(f"{body}{seq[p]} ", seq[p + 1], f"{body}{seq[q]} ", seq[q + 1])


def _successor(rng: random.Random) -> Item:
    filler = rng.choices(LETTERS, k=7)
    at = rng.randrange(8)
    d, e = rng.sample(range(10), 2)

    def prompt(digit: int) -> str:
        chars = filler[:at] + [str(digit)] + filler[at:]
        return "".join(chars) + " "

    return Item(prompt(d), str((d + 1) % 10), prompt(e), str((e + 1) % 10))


def _ioi(rng: random.Random) -> Item:
    io, s = rng.sample(NAMES, 2)
    filler = rng.choices(LETTERS, k=8)
    first, second, third = sorted(rng.sample(range(8), 3))
    a, b = (io, s) if rng.random() < 0.5 else (s, io)

    def prompt(repeated: str) -> str:
        chars = list(filler)
        chars[first], chars[second], chars[third] = a, b, repeated
        return "".join(chars) + " "

    # corrupted: the other name repeated, so the answer is the subject (ABC-style flip)
    return Item(prompt(s), io, prompt(io), s, (s,))


def _two_hop(rng: random.Random) -> Item:
    a, b, c, d, e = rng.sample(LETTERS, 5)
    order = rng.sample(range(3), 3)

    def prompt(end: str, other: str) -> str:
        pairs = [a + b, b + end, d + other]
        return "".join(pairs[i] + "." for i in order) + a + " "

    # corrupted: the chain's end and the unrelated pair's value swapped, so a -> b -> e
    return Item(prompt(c, e), c, prompt(e, c), e, (b,))


GENERATORS: dict[str, Callable[[random.Random], Item]] = {
    "induction": _induction,
    "successor": _successor,
    "ioi": _ioi,
    "two_hop": _two_hop,
}


@dataclass(frozen=True)
class Drill:
    """A training-only sequence: at position ``positions[i]`` the model is to predict
    ``targets[i]`` (one character each). The drills of one kind share their length; their
    positions may differ from drill to drill."""

    text: str
    positions: tuple[int, ...]
    targets: str


def _induction_repeat(rng: random.Random) -> Drill:
    """The classic induction data: 8 distinct letters repeated; every position of the copy but
    its last predicts the next letter (Olsson et al. 2022). Its period and positions are fixed,
    so a head can solve it by position alone (attend 7 back): no recipe of the zoo uses it now."""
    seq = rng.sample(LETTERS, 8)
    return Drill("".join(seq + seq), tuple(range(8, 15)), "".join(seq[1:]))


def _induction_shifted(rng: random.Random) -> Drill:
    """Induction on repeated random tokens with a random period and offset, 16 characters: a
    filler of ``r`` distinct letters, then a block of ``period`` (3 to 8) other distinct letters
    repeated cyclically to the end. Every position past the block's first occurrence, but the
    last, predicts its next letter; with the period and the block's start drawn per drill, only
    the content (the letter after this letter's earlier occurrence) finds it, not a position."""
    period = rng.randint(3, 8)
    r = rng.randint(0, 16 - 2 * period)
    letters = rng.sample(LETTERS, r + period)
    filler, block = letters[:r], letters[r:]
    text = "".join(filler + [block[i % period] for i in range(16 - r)])
    positions = tuple(range(r + period, 15))
    return Drill(text, positions, "".join(text[i + 1] for i in positions))


def _induction_queries(rng: random.Random) -> Drill:
    """The induction task's own step at four positions: 8 distinct letters, then four queries
    ``x `` (a letter and the space); at each space the answer is the letter after ``x`` in the
    body, found as in a task prompt (the token two back, its earlier occurrence, the next)."""
    seq = rng.sample(LETTERS, 8)
    at = rng.sample(range(7), 4)
    text = "".join(seq) + "".join(seq[p] + " " for p in at)
    return Drill(text, tuple(9 + 2 * i for i in range(4)), "".join(seq[p + 1] for p in at))


DRILLS: dict[str, Callable[[random.Random], Drill]] = {
    "induction_repeat": _induction_repeat,
    "induction_shifted": _induction_shifted,
    "induction_queries": _induction_queries,
}


def drills(name: str, n: int, seed: int) -> list[Drill]:
    """``n`` drills of kind ``name`` drawn from ``seed``."""
    if name not in DRILLS:
        raise InputError(f"no zoo drill {name!r}; known: {', '.join(DRILLS)}")
    rng = random.Random(f"drill:{name}:{seed}")
    return [DRILLS[name](rng) for _ in range(n)]


def items(task: str, n: int, seed: int) -> list[Item]:
    """``n`` items of ``task`` drawn from ``seed``."""
    if task not in GENERATORS:
        raise InputError(f"no zoo task {task!r}; known: {', '.join(GENERATORS)}")
    rng = random.Random(f"{task}:{seed}")
    return [GENERATORS[task](rng) for _ in range(n)]


def as_task(task: str, rows: list[Item], prefix: str = "") -> Task:
    """The items as a toolkit ``Task`` (plain format: the tokenizer has no chat template)."""
    examples = [
        Example(
            f"{prefix}{i}", task, r.prompt, r.answer, corrupted_prompt=r.corrupted,
            corrupted_answer=r.corrupted_answer, distractors=r.distractors,
        )
        for i, r in enumerate(rows)
    ]  # fmt: skip
    return Task(task, examples, source=f"zoo:{task}", meta={"fmt": "plain"})
