"""The verdict rules' measured false-positive rates and powers, and the intervals' coverage, at
the pages' n (``interp_heads.analysis.calibration``, ``interp_heads.analysis.coverage``, and on
the trained zoo models ``interp_heads.zoo.planted_power``).

    flock /tmp/interp_cpu.lock .venv/bin/python -m bench.checks.calibration [--replicates 200]
        [--tiny-replicates 200] [--coverage-reps 200] [--zoo-replicates 400]

Writes docs/calibration.json (the rows ``sweep.verdict.error_rates`` reads for every verdict row
of the pages) and docs/calibration.md (the same as tables, with the command and its time).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import time
from pathlib import Path

from interp_heads.analysis import calibration as cal
from interp_heads.analysis import coverage as cov
from interp_heads.store.atomic import write_atomic

DOCS = Path(__file__).resolve().parents[2] / "docs"
NS = (19, 24, 48, 60)  # the pages' n: 19-24 (spec_curve) and 48-60 (compare, results)
TINY_NS = (24,)  # one n: each family builds a model (the slowest part)
DRAWS = 5  # the pages' draws
MORE_DRAWS = 20  # what the calibration asks for when 5 are not enough
PROPORTIONS = (0.0, 0.1, 0.5, 0.9, 1.0)
DIFFERENCES = ((0.0, 0.0), (0.1, 0.1), (0.5, 0.5), (0.9, 0.9), (1.0, 1.0), (0.0, 0.6), (0.3, 0.8))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=400)
    ap.add_argument("--tiny-replicates", type=int, default=200)
    ap.add_argument("--coverage-reps", type=int, default=200)
    ap.add_argument("--zoo-replicates", type=int, default=400)
    ap.add_argument("--out", type=Path, default=DOCS)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    rows, times = [], {}
    for draws in (DRAWS, MORE_DRAWS):
        for n in NS:
            seed = 1000 * n + 100 * draws
            for i, kind in enumerate(("randomk_vs_randomk", "random_weights")):
                rows += cal.rows_for(kind, n, draws, args.replicates, seed=seed + i)
            for j, effect in enumerate(cal.EFFECTS):
                for m, kind in enumerate(cal.POWER_KINDS):
                    rows += cal.rows_for(
                        kind, n, draws, args.replicates, seed + 10 + 5 * j + m, effect
                    )
    times["simulated"] = time.perf_counter() - t0
    t2 = time.perf_counter()
    cells = [
        {"n": n, "p": p, **{m: cov.cell_coverage(n, p, m) for m in ("old", "wilson", "clopper_pearson")}}
        for n in NS
        for p in PROPORTIONS
    ]  # fmt: skip
    diffs = [
        {"n": n, "p_top": a, "p_control": b, "draws": DRAWS,
         **cov.difference_coverage(n, a, b, DRAWS, args.coverage_reps, seed=n)}
        for n in NS for a, b in DIFFERENCES
    ]  # fmt: skip
    times["coverage"] = time.perf_counter() - t2
    _write(args, rows, cells, diffs, times)  # the tiny models take longest: keep what is done
    t1 = time.perf_counter()
    for n in TINY_NS if args.tiny_replicates else ():
        for permuted in (False, True):
            rows += cal.run_tiny(n, DRAWS, args.tiny_replicates, seed=7 * n, permuted=permuted)
            times["tiny_model"] = time.perf_counter() - t1
            _write(args, rows, cells, diffs, times)
    if args.zoo_replicates:
        t3 = time.perf_counter()
        rows += zoo_rows(args.zoo_replicates)
        times["zoo"] = time.perf_counter() - t3
        _write(args, rows, cells, diffs, times)
    return 0


def zoo_rows(replicates: int) -> list[dict]:
    """``zoo.planted_power`` on every full zoo model (trained, or from the weights cache) at the
    pages' n and draws."""
    from interp_heads.zoo import planted_power as pp
    from interp_heads.zoo.cache import zoo_model
    from interp_heads.zoo.recipes import ZOO

    pops = [p for r in ZOO.values() for p in pp.populations(zoo_model(r).require_truth())]
    return [
        row
        for draws in (DRAWS, MORE_DRAWS)
        for n in NS
        for row in pp.run(pops, n, draws, replicates, seed=31 * n + draws)
    ]


def _write(args, rows, cells, diffs, times) -> None:
    payload = {
        "generated": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "command": "flock /tmp/interp_cpu.lock .venv/bin/python -m bench.checks.calibration "
        f"--replicates {args.replicates} --tiny-replicates {args.tiny_replicates} "
        f"--coverage-reps {args.coverage_reps} --zoo-replicates {args.zoo_replicates}",
        "seconds": {k: round(v, 1) for k, v in times.items()},
        "family": cal.FAMILY,
        "rows": rows,
        "cell_coverage": cells,
        "difference_coverage": diffs,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    write_atomic(args.out / "calibration.json", json.dumps(payload, indent=1) + "\n")
    write_atomic(args.out / "calibration.md", render(payload))
    print(render(payload), flush=True)


def render(payload: dict) -> str:
    """docs/calibration.md from the JSON payload."""
    rows = payload["rows"]
    nulls = [r for r in rows if "fpr" in r]
    power = [r for r in rows if r["kind"] in cal.POWER_KINDS]
    zoo = [r for r in rows if r["kind"] == "zoo_power"]
    out = [
        "# Calibration of the TopK-vs-RandomK verdict",
        "",
        f"Generated by `{payload['command']}` on {payload['generated']} "
        f"(seconds on the shared 2-core machine: {payload['seconds']}). Method: "
        "`interp_heads/analysis/calibration.py` (rules, null kinds, what is simulated and what "
        f"is a model); the Holm rule is adjusted over families of {payload['family']} cells. "
        "Every rate has its exact (Clopper-Pearson) 95% interval.",
        "",
        "## Which rule the pages use",
        "",
        *choice(rows),
        "",
        "## False-positive rate (no head specific to the task)",
        "",
        "| rule | null kind | n | draws | replicates | false positives | FPR [95% CI] |",
        "|---|---|---|---|---|---|---|",
        *(
            f"| {r['rule']} | {r['kind']} | {r['n']} | {r['draws']} | {r['replicates']} | "
            f"{r['positives']} | {r['fpr']:.3f} [{r['fpr_low']:.3f}, {r['fpr_high']:.3f}] |"
            for r in nulls
        ),
        "",
        "## Power (TopK's per-example drop planted at a known probability; simulated records)",
        "",
        "| rule | draws population | n | draws | planted drop | replicates | power [95% CI] |",
        "|---|---|---|---|---|---|---|",
        *(
            f"| {r['rule']} | {_population(r['kind']).split()[0]} | {r['n']} | {r['draws']} | {r['effect']:g} | {r['replicates']} | "
            f"{r['power']:.3f} [{r['power_low']:.3f}, {r['power_high']:.3f}] |"
            for r in power
        ),
        "",
        "## Power on trained models (the zoo; `interp_heads/zoo/planted_power.py`)",
        "",
        "TopK: a set of the zoo models' heads whose true drop below RandomK (every prompt, every "
        "draw outside it, mean ablation) lies in the bin; n prompts and the draws sampled from "
        "the model's own scores. True drop: the mean over the TopK sets drawn.",
        "",
        "| rule | n | draws | true drop bin | true drop | replicates | power [95% CI] |",
        "|---|---|---|---|---|---|---|",
        *(
            f"| {r['rule']} | {r['n']} | {r['draws']} | {_bin(r)} | "
            f"{r['true_drop']:.2f} | {r['replicates']} | "
            f"{r['power']:.3f} [{r['power_low']:.3f}, {r['power_high']:.3f}] |"
            for r in zoo
        ),
        "",
        "## Coverage of the 95% intervals",
        "",
        "Cell intervals (exact coverage; old: bootstrap widened to Wilson, as the pages had):",
        "",
        "| n | p | old | Wilson | Clopper-Pearson |",
        "|---|---|---|---|---|",
        *(
            f"| {c['n']} | {c['p']:g} | {c['old']:.3f} | {c['wilson']:.3f} | "
            f"{c['clopper_pearson']:.3f} |"
            for c in payload["cell_coverage"]
        ),
        "",
        "TopK - RandomK intervals (simulated; old: paired percentile bootstrap; new: the inverted "
        "exact test of `interp_heads/sweep/exact.py`):",
        "",
        "| n | TopK p | RandomK p | draws | old | new |",
        "|---|---|---|---|---|---|",
        *(
            f"| {d['n']} | {d['p_top']:g} | {d['p_control']:g} | {d['draws']} | {d['old']:.3f} | "
            f"{d['new']:.3f} |"
            for d in payload["difference_coverage"]
        ),
        "",
    ]
    return "\n".join(out)


def _population(kind: str) -> str:
    words = {"power": "heavy-tailed draws", "power_light": "light draws"}
    return words.get(kind, "trained zoo models")


def _bin(row: dict) -> str:
    return f"{row['effect']:g} to {row['effect_high']:g}"


def choice(rows: list[dict]) -> list[str]:
    """Sentences from the numbers: which rules hold a false-positive rate of at most 0.05 in
    every null kind, and the pages' rule's power at each n and draws."""
    from interp_heads.sweep.verdict import RULE

    out = []
    for draws in sorted({r["draws"] for r in rows}):
        nulls = [r for r in rows if "fpr" in r and r["draws"] == draws]
        worst = {}
        for r in nulls:
            worst[r["rule"]] = max(worst.get(r["rule"], 0.0), r["fpr"])
        ok = [rule for rule, f in worst.items() if f <= 0.05]
        out.append(
            f"- {draws} draws: measured FPR at most 0.05 in every null kind and n: "
            + (", ".join(f"`{r}`" for r in ok) or "no rule")
            + "; worst FPR per rule: "
            + ", ".join(f"`{r}` {f:.3f}" for r, f in worst.items())
            + "."
        )
        for kind in (*cal.POWER_KINDS, "zoo_power"):
            mine = [
                r for r in rows if r["kind"] == kind and r["draws"] == draws and r["rule"] == RULE
            ]
            by_n = {}
            for r in mine:
                at = f"true drop {_bin(r)}" if kind == "zoo_power" else "drop"
                if kind != "zoo_power":
                    at += f" {r['effect']:g}"
                by_n.setdefault(r["n"], []).append(f"{r['power']:.2f} at {at}")
            if by_n:
                out.append(
                    f"- The pages' rule `{RULE}` (`interp_heads.sweep.verdict`) at {draws} draws, "
                    f"{_population(kind)}: power "
                    + "; ".join(f"n = {n}: {', '.join(v)}" for n, v in by_n.items())
                    + "."
                )
    return out


if __name__ == "__main__":
    raise SystemExit(main())
