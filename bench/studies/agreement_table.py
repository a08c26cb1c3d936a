"""The docs/attribution.md table of bench/results/ablation_agreement.json (markdown, stdout)."""

from __future__ import annotations

import json

from bench.common import result_path

SOURCE = result_path("ablation_agreement.json")
TASKS = ("retrieval", "knowledge_recall", "math_calculation", "inference", "antonyms")


def _cell(row: dict, key: str) -> str:
    value = row.get(key)
    return "" if value is None else str(value)


def main() -> None:
    rows = json.loads(SOURCE.read_text())["rows"]
    print(
        "| task (n, format) | method | Spearman | top-16 | top-32 | s | share of reference "
        "| `verify = 8` verdict (s) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for task in TASKS:
        mine = [r for r in rows if r["task"] == task]
        fmt = next((r["fmt"] for r in mine if "fmt" in r), "plain")  # rows before fmt was stored
        for r in mine:
            ref = "reference" in r["method"]
            verdict = (
                f"{r['verify_verdict']} ({r['verify_s']:.1f})" if "verify_verdict" in r else ""
            )
            cells = [
                f"{task} ({r['n']}, {r.get('fmt', fmt)})",
                "exact mean ablation (reference)" if ref else r["method"],
                "1" if ref else _cell(r, "spearman"),
                "16" if ref else _cell(r, "top16"),
                "32" if ref else _cell(r, "top32"),
                _cell(r, "s"),
                "1" if ref else _cell(r, "share_of_exact"),
                verdict,
            ]
            print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
