"""How many of the task's own top heads does each RandomK draw contain, and does that predict its
accuracy? Reads a finished run folder (no model).

    .venv/bin/python -m bench.studies.randomk_overlap runs/demo
"""

from __future__ import annotations

import glob
import json
import sys

import pandas as pd


def main(run: str) -> None:
    rank = pd.read_csv(f"{run}/ranking.csv")
    rows = []
    for path in sorted(glob.glob(f"{run}/conditions/*__RandomK__*.json")):
        with open(path) as f:
            d = json.load(f)
        top = rank[rank.task == d["task"]].sort_values("rank").label.tolist()
        acc = d["scores"]["accuracy"]
        rows.append({
            "task": d["task"], "k": d["k"], "seed": d["seed"], "accuracy": round(sum(acc) / len(acc), 2),
            "top8_in_draw": len(set(d["heads"]) & set(top[:8])),
            "top16_in_draw": len(set(d["heads"]) & set(top[:16])),
        })  # fmt: skip
    frame = pd.DataFrame(rows).sort_values(["task", "k", "seed"])
    print(frame.to_string(index=False))
    for task, g in frame.groupby("task"):
        print(
            f"{task}: corr(accuracy, top-16 heads in the draw) = {g['accuracy'].corr(g['top16_in_draw']):.2f}"
        )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "runs/demo")
