"""Two run folders, table by table: are their results the same, bit for bit?

Compares the result tables (``sweep.parquet``, ``summary.csv``, ``significance.csv``,
``baseline.csv``, ``ranking.csv``, ``attribution.parquet``, ``known_heads.csv``), every generation
(``generations.jsonl``) and every stored condition (resume key, generations, scores, labels,
heads, example ids). Used to show that a refactor changed no result:

    git worktree add /tmp/before <old commit>
    for c in quick_zero demo_small cm_small; do
      (cd /tmp/before && PYTHONPATH=. python -m interp_heads.cli run --threads 2 \\
         --config $OLDPWD/bench/equivalence/$c.toml --out /tmp/runs/before/$c)
      interp-heads run --threads 2 --config bench/checks/equivalence/$c.toml --out /tmp/runs/after/$c
      python -m bench.checks.compare_runs /tmp/runs/before/$c /tmp/runs/after/$c
    done

Fix the torch threads (``--threads``): with another thread count the float sums of attribution
and of the MiniLM stand-in change in the last bits (measured: up to 1.6e-6 in ablation_atp
scores), and so do the digests of the replacement values in the resume keys.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

TABLES = (
    "sweep.parquet",
    "summary.csv",
    "significance.csv",
    "baseline.csv",
    "ranking.csv",
    "generations.jsonl",
    "attribution.parquet",
    "known_heads.csv",
)
CONDITION_KEYS = ("resume_key", "generations", "scores", "labels", "heads", "ids")


def _read(path: Path) -> pd.DataFrame:
    if path.suffix == ".parquet":
        return pd.read_parquet(path)
    return pd.read_json(path, lines=True, dtype=False)


def compare_tables(a: Path, b: Path) -> list[str]:
    problems = []
    for name in TABLES:
        pa, pb = a / name, b / name
        if not pa.exists() and not pb.exists():
            continue
        if pa.exists() != pb.exists():
            problems.append(f"{name}: only in {'the first' if pa.exists() else 'the second'}")
        elif name.endswith(".csv"):
            if pa.read_bytes() != pb.read_bytes():
                problems.append(f"{name}: bytes differ")
        else:
            try:
                pd.testing.assert_frame_equal(_read(pa), _read(pb), check_exact=True)
            except AssertionError as exc:
                problems.append(f"{name}: {str(exc).splitlines()[0]}")
        print(("DIFF " if problems and problems[-1].startswith(name) else "same ") + name)
    return problems


def compare_conditions(a: Path, b: Path) -> list[str]:
    ca = {p.name: p for p in (a / "conditions").glob("*__*.json")}
    cb = {p.name: p for p in (b / "conditions").glob("*__*.json")}
    if set(ca) != set(cb):
        return [f"condition files differ: {sorted(set(ca) ^ set(cb))[:3]}"]
    problems = []
    for name in sorted(ca):
        x, y = json.loads(ca[name].read_text()), json.loads(cb[name].read_text())
        problems += [f"{name}: {k}" for k in CONDITION_KEYS if x[k] != y[k]]
    print(f"{'DIFF' if problems else 'same'} {len(ca)} conditions ({', '.join(CONDITION_KEYS)})")
    return problems


def main(argv: list[str]) -> int:
    a, b = Path(argv[0]), Path(argv[1])
    problems = compare_tables(a, b) + compare_conditions(a, b)
    for line in problems[:20]:
        print("  " + line)
    print("ALL SAME" if not problems else f"{len(problems)} differences")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
