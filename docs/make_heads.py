"""Which heads: write docs/heads.md from a run of configs/heads.toml (``make heads`` runs both).

    python docs/make_heads.py runs/heads [--phase known retrieval stability specificity page | all]

Every phase reuses the run's rankings (``ranking.csv``) and rank/eval splits (``manifest.json``);
each stores its numbers under ``<run>/heads/`` and is skipped when they are there, so the phases can
run as separate commands. ``page`` needs no model: it writes the page from the stored numbers, and
the "Which heads" section of docs/results.md (``--results``), which ``make_results.py`` keeps.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from interp_heads.store.csv_cells import write_csv

KS = [8, 32]
SWEEP = dict(ks=KS, seeds=3, ablation="mean", max_new_tokens=6, exclude_top=True)


class Inputs:
    """The run's model, tasks (rank and eval splits) and rankings, loaded on first use."""

    def __init__(self, run: Path):
        self.run, self.manifest = run, json.loads((run / "manifest.json").read_text())
        ranking = pd.read_csv(run / "ranking.csv").sort_values(["task", "rank"])
        self.rankings = {
            t: [(int(layer), int(head)) for layer, head in zip(g["layer"], g["head"], strict=True)]
            for t, g in ranking.groupby("task", sort=False)
        }
        self.rankings = {t: self.rankings[t] for t in self.manifest["splits"]}
        self._model = None

    @property
    def model(self):
        if self._model is None:
            from interp_heads.models.load import load_model

            self._model = load_model(self.manifest["config"]["model"], device="cpu")
        return self._model

    def split(self, name: str, part: str):
        from interp_heads.tasks import load_task

        return load_task(name).subset(ids=self.manifest["splits"][name][part])


def phase_known(inp: Inputs, out: Path) -> None:
    from interp_heads.analysis.known_heads import known_head_scores

    scores = known_head_scores(inp.model, n_seqs=8, half=24)
    out.write_text(json.dumps({k: s.to_dict() for k, s in scores.items()}))


def phase_retrieval(inp: Inputs, out: Path) -> None:
    from interp_heads.attribution import attribute_heads
    from interp_heads.metrics import Accuracy
    from interp_heads.sweep.loop import SweepConfig, run_sweep

    scores = attribute_heads(inp.model, inp.split("retrieval", "rank"), "retrieval_score")
    cfg = SweepConfig(selections=["topk", "randomk"], metrics=["accuracy"], **SWEEP)
    result = run_sweep(
        inp.model,
        {"retrieval": inp.split("retrieval", "eval")},
        {"retrieval": scores},
        cfg,
        [Accuracy()],
        batch_size=32,
        out_dir=inp.run / "heads" / "retrieval_sweep",
        progress=False,
    )
    write_csv(result.significance(), out.with_suffix(".csv"))
    out.write_text(json.dumps(scores.to_dict()))


def phase_stability(inp: Inputs, out: Path) -> None:
    from interp_heads.attribution.stability import split_half

    cfg = inp.manifest["config"]
    frames = [
        split_half(inp.model, inp.split(name, "rank"), [*KS, 16], cfg["attribution"], batch_size=32)
        for name in inp.rankings
    ]
    write_csv(pd.concat(frames), out)


def phase_specificity(inp: Inputs, out: Path) -> None:
    from interp_heads.analysis.specificity import cross_task_records, drop_matrix
    from interp_heads.metrics import Accuracy
    from interp_heads.sweep.loop import SweepConfig

    tasks = {name: inp.split(name, "eval") for name in inp.rankings}
    cfg = SweepConfig(metrics=["accuracy"], **SWEEP)
    rec = cross_task_records(
        inp.model, tasks, inp.rankings, cfg, inp.run / "heads" / "cross", metrics=[Accuracy()],
        batch_size=32,
    )  # fmt: skip
    write_csv(drop_matrix(rec), out)


PHASES = {
    "known": ("known.json", phase_known),
    "retrieval": ("retrieval.json", phase_retrieval),
    "stability": ("stability.csv", phase_stability),
    "specificity": ("specificity.csv", phase_specificity),
}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--phase", nargs="+", default=["all"], choices=[*PHASES, "page", "all"])
    ap.add_argument("--out", type=Path, default=Path(__file__).with_name("heads.md"))
    ap.add_argument("--results", type=Path, default=Path(__file__).with_name("results.md"))
    args = ap.parse_args(argv)
    if not (args.run / "ranking.csv").is_file():
        raise SystemExit(f"error: {args.run} has no ranking.csv: run configs/heads.toml first")
    inp = Inputs(args.run)
    store = args.run / "heads"
    store.mkdir(exist_ok=True)
    for name, (file, fn) in PHASES.items():
        if {name, "all"} & set(args.phase) and not (store / file).exists():
            fn(inp, store / file)
            print(f"{name}: {store / file}")
    if {"page", "all"} & set(args.phase):
        from heads_page import write_page  # docs/heads_page.py

        write_page(inp, store, args.out)
        print(f"wrote {args.out}")
        from heads_results import results_block  # docs/heads_results.py
        from make_results import with_heads_block

        text = args.results.read_text() if args.results.exists() else ""
        args.results.write_text(with_heads_block(text, results_block(inp, store)))
        print(f"wrote the make heads section of {args.results}")


if __name__ == "__main__":
    main()
