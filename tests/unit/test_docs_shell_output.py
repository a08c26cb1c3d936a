"""Every shell example in the docs that shows output is run by a test, or says it is illustrative.

A fenced block shows output when it holds commented output lines (``#  ...`` under a command) or
no command at all (the output of a command named just above it). Each such block is either in
:data:`RUN_BY`, with the test that runs it (checked here: the command as written, its output), or
has the word "illustrative" in the paragraph before it or right after it.
"""

from __future__ import annotations

import ast
import re
import shlex
from pathlib import Path

from interp_heads.sweep.stats import MIN_DRAWS
from tests.helpers import DATA, cli

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
# (doc, the block's first line) -> what runs it
RUN_BY = {
    (
        "tasks.md",
        "cogqa_small.json: CogQA format",
    ): "test_the_cogqa_listing_is_what_tasks_show_prints",
    ("tasks.md", "interp-heads attribute --task data/user_tasks/antonyms.jsonl"): (
        "tests/integration/test_user_task_smollm.py (test_the_user_task_example_is_the_tested_one)"
    ),
}


def _blocks(path: Path):
    """``(first line, lines, text before, text after)`` of each fenced block of ``path``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("```"):
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            body = lines[i + 1 : end]
            before = "\n".join(lines[max(0, i - 6) : i])
            after = "\n".join(lines[end + 1 : end + 6])
            if body:
                yield body[0], body, before, after
            i = end + 1
        else:
            i += 1


def _shows_output(body: list[str], before: str) -> bool:
    commented = any(re.match(r"^#\s{2}\S", line) for line in body)
    no_command = not any(re.match(r"^(interp-heads|python|\.venv|make|\$)", ln) for ln in body)
    named_above = "interp-heads " in before.splitlines()[-1] if before.strip() else False
    return commented or (no_command and named_above)


def test_every_block_that_shows_output_is_run_or_illustrative():
    loose = []
    for path in DOCS:
        for first, body, before, after in _blocks(path):
            if not _shows_output(body, before):
                continue
            known = any(path.name == doc and first.startswith(start) for doc, start in RUN_BY)
            if not known and "illustrative" not in (before + after).lower():
                loose.append(f"{path.name}: {first}")
    assert not loose, "blocks showing output that no test runs: " + "; ".join(loose)


def test_the_cogqa_listing_is_what_tasks_show_prints(capsys):
    (body,) = [
        b for f, b, _, _ in _blocks(ROOT / "docs" / "tasks.md") if f.startswith("cogqa_small")
    ]
    assert cli("tasks", "show", DATA / "cogqa_small.json") == 0
    printed = capsys.readouterr().out.splitlines()
    shown = [line for line in body if line.strip() != "..."]
    at = [printed.index(line) for line in shown]  # each line printed, in the same order
    assert at == sorted(at) and at[0] == 0 and at[-1] == len(printed) - 1


def _flags(argv: list[str]) -> dict[str, str]:
    return {a: b for a, b in zip(argv, argv[1:], strict=False) if a.startswith("--")}


def test_the_user_task_example_is_the_tested_one():
    """docs/tasks.md's end-to-end ablate command is the one the integration test runs (same
    flags), with at least the random draws a verdict needs (``--seeds 3`` gives no p-value)."""
    (body,) = [b for f, b, _, _ in _blocks(ROOT / "docs" / "tasks.md") if "antonyms.jsonl" in f]
    text = " ".join(line for line in body if not line.startswith("#")).replace("\\", " ")
    commands = [shlex.split(c) for c in text.split("interp-heads")[1:]]
    ablate = next(c for c in commands if c[0] == "ablate")
    tree = ast.parse((ROOT / "tests" / "integration" / "test_user_task_smollm.py").read_text())
    (call,) = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "cli"
        and n.args and getattr(n.args[0], "value", None) == "ablate"
    ]  # fmt: skip
    tested_argv = [str(a.value) if isinstance(a, ast.Constant) else "?" for a in call.args]
    for flag in ("--k", "--seeds", "--metrics", "--n-eval", "--max-new-tokens"):
        assert _flags(ablate)[flag] == _flags(tested_argv)[flag], flag
    assert int(_flags(ablate)["--seeds"]) >= MIN_DRAWS
