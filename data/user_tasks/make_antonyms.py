"""Write antonyms.jsonl: a user-format task (``prompt`` and ``answer`` only), not a built-in one.

Three worked word -> opposite pairs, then a query word; the answer is its opposite. It stands in
for the tasks users bring (no corrupted prompts, no distractors, no declared format) and is used by
``tests/integration/test_user_task_smollm.py`` and ``docs/tasks.md``.

    python data/user_tasks/make_antonyms.py   # deterministic: rewrites antonyms.jsonl
"""

from __future__ import annotations

import json
import random
from pathlib import Path

PAIRS = (
    ("hot", "cold"), ("big", "small"), ("up", "down"), ("fast", "slow"), ("old", "new"),
    ("happy", "sad"), ("light", "dark"), ("tall", "short"), ("rich", "poor"), ("early", "late"),
    ("open", "closed"), ("hard", "soft"), ("wet", "dry"), ("full", "empty"), ("strong", "weak"),
    ("high", "low"), ("good", "bad"), ("left", "right"), ("day", "night"),
    ("in", "out"), ("win", "lose"), ("yes", "no"), ("love", "hate"), ("black", "white"),
    ("thick", "thin"), ("loud", "quiet"), ("clean", "dirty"), 
    ("first", "last"), ("top", "bottom"), ("push", "pull"), ("buy", "sell"), ("give", "take"),
    ("near", "far"), ("cheap", "expensive"), ("inside", "outside"), ("before", "after"),
    ("start", "end"), ("true", "false"), ("alive", "dead"), ("friend", "enemy"), ("north", "south"),
    ("east", "west"), ("boy", "girl"), ("man", "woman"), ("king", "queen"), ("question", "answer"),
)  # fmt: skip
N = 300


def main() -> None:
    rng = random.Random(0)
    rows, seen = [], set()
    while len(rows) < N:
        shots = rng.sample(PAIRS, 4)
        query = shots.pop()
        if rng.random() < 0.5:  # both directions
            query = query[::-1]
        prompt = "".join(f"{a} -> {b}\n" for a, b in shots) + f"{query[0]} ->"
        if prompt in seen:
            continue
        seen.add(prompt)
        rows.append({"id": f"ant-{len(rows):03d}", "prompt": prompt, "answer": query[1]})
    out = Path(__file__).with_name("antonyms.jsonl")
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(f"wrote {len(rows)} rows to {out}")


if __name__ == "__main__":
    main()
