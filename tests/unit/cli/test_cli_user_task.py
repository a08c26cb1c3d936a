"""``attribute`` then ``ablate`` on a user task (prompt + answer only) with the tiny model.

The tiny random model answers nothing on purpose, so the task is made from its own greedy answers:
even rows take the model's answer as reference (answered correctly), odd rows a wrong one. The
commands must rank on correct rows only, leave the ranking's rows out of the evaluation and
evaluate correct rows only, all without any flag.
"""

from __future__ import annotations

import json

import pandas as pd

from interp_heads.generation.decode import generate
from interp_heads.tasks.checking import first_line, normalize
from interp_heads.testing.tiny import tiny_model
from tests.helpers import cli

WORDS = "cat dog sun map hat pen cup box jar key bag rug fox owl ant bee".split()


def _user_task(path):
    prompts = [f"Say {w}: " for w in WORDS]
    gens = generate(tiny_model(), prompts, 4, stop_at_newline=True)
    rows, correct = [], []
    for i, (p, g) in enumerate(zip(prompts, gens, strict=True)):
        answer = normalize(first_line(g))
        ok = i % 2 == 0 and bool(answer)
        rows.append({"id": f"u{i}", "prompt": p, "answer": answer if ok else "zzzz"})
        if ok:
            correct.append(f"u{i}")
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return correct


def test_user_task_ranks_and_evaluates_correct_disjoint_examples(tmp_path, capsys):
    task = tmp_path / "mine.jsonl"
    correct = _user_task(task)
    assert len(correct) >= 5
    attr, abl = tmp_path / "attr", tmp_path / "abl"
    assert (
        cli(
            "attribute",
            "--model",
            "tiny",
            "--task",
            task,
            "--n-examples",
            2,
            "--max-new-tokens",
            4,
            "--out",
            attr,
        )
        == 0
    ), capsys.readouterr().err
    err = capsys.readouterr().err
    assert "prompt format: plain" in err and "ranking on 2 correctly answered" in err
    prov = json.loads((attr / "attribution" / "mine.json").read_text())["provenance"]
    assert prov["example_ids"] == correct[:2] or sorted(prov["example_ids"]) == sorted(correct[:2])
    assert pd.read_csv(attr / "ranking.csv")["method"].iloc[0] == "ablation_atp"

    assert (
        cli(
            "ablate",
            "--model",
            "tiny",
            "--task",
            task,
            "--ranking",
            attr,
            "--k",
            "1,2",
            "--seeds",
            2,
            "--metrics",
            "accuracy",
            "--max-new-tokens",
            4,
            "--out",
            abl,
        )
        == 0
    ), capsys.readouterr().err
    evaluated = set(pd.read_parquet(abl / "sweep.parquet").example_id.astype(str))
    assert evaluated == set(correct[2:])  # correct rows, minus those the heads were ranked on
    base = pd.read_parquet(abl / "summary.parquet").query(
        "selection == 'baseline' and metric == 'accuracy'"
    )
    assert base["mean"].iloc[0] == 1.0

    over = tmp_path / "over"
    assert (
        cli(
            "ablate",
            "--model",
            "tiny",
            "--task",
            task,
            "--ranking",
            attr,
            "--k",
            "1",
            "--seeds",
            1,
            "--metrics",
            "accuracy",
            "--max-new-tokens",
            4,
            "--allow-overlap",
            "--no-filter",
            "--out",
            over,
        )
        == 0
    )
    assert len(set(pd.read_parquet(over / "sweep.parquet").example_id.astype(str))) == len(WORDS)


def test_declared_format_is_used(tmp_path, capsys):
    task = tmp_path / "decl.jsonl"
    task.write_text(
        json.dumps({"fmt": "plain"})
        + "\n"
        + json.dumps({"prompt": "Say cat: ", "answer": "cat"})
        + "\n"
    )
    assert (
        cli("attribute", "--model", "tiny", "--task", task, "--no-filter", "--out", tmp_path / "a")
        == 0
    )
    assert "prompt format: plain (file)" in capsys.readouterr().err
