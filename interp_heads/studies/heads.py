"""Which heads: write docs/heads.md from the two run folders of ``make heads`` (no model needed).

    interp-heads run --config configs/heads.toml --out runs/heads
    interp-heads run --config configs/heads_retrieval.toml --out runs/heads_retrieval
    python -m interp_heads.studies.heads runs/heads runs/heads_retrieval

The first run ranks the four built-in tasks, masks TopK, ExclusiveTopK and RandomK, and adds the
cross-task matrix and the split-half re-ranking (``analyses``: ``heads/specificity.csv``,
``heads/stability.csv``); its known-head step stores the detectors' scores
(``known_heads.json``). The second ranks the retrieval task by retrieval score on the same
examples and masks those heads. This script only reads the two folders; it also writes the
"Which heads" section of docs/results.md (``--results``), which ``make demo`` keeps.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from interp_heads.run import Run
from interp_heads.store.pages import read_page
from interp_heads.store.pages import write_page as write_file
from interp_heads.studies.base import STUDIES, Study, StudyRun, read_scores


class Inputs:
    """The two run folders' rankings, splits, known-head scores and retrieval ranking."""

    def __init__(self, run: Path, retrieval_run: Path):
        self.run, self.retrieval_run = run, retrieval_run
        self.manifest = Run.at(run).need("manifest")
        ranking = Run.at(run).need("ranking").sort_values(["task", "rank"])
        self.rankings = {
            t: [(int(layer), int(head)) for layer, head in zip(g["layer"], g["head"], strict=True)]
            for t, g in ranking.groupby("task", sort=False)
        }
        self.rankings = {t: self.rankings[t] for t in self.manifest["splits"]}
        self.known_path = Run.at(run).folder.known_entry
        self.retrieval_path = Run.at(retrieval_run).folder.attribution_entry("retrieval")

    def known(self) -> dict:
        from interp_heads.attribution import HeadScores

        entry = Run.at(self.run).need("known_entry")
        return {k: HeadScores.from_dict(v) for k, v in entry["scores"].items()}

    def retrieval(self):
        return read_scores(self.retrieval_path)

    def retrieval_significance(self) -> pd.DataFrame:
        return Run.at(self.retrieval_run).need("significance")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("retrieval_run", type=Path)
    ap.add_argument("--out", type=Path, default=Path("docs/heads.md"))
    ap.add_argument("--results", type=Path, default=Path("docs/results.md"))
    args = ap.parse_args(argv)
    write_pages(args.run, args.retrieval_run, args.out, args.results)


def write_pages(run: Path, retrieval_run: Path, out: Path, results: Path) -> list[Path]:
    """docs/heads.md and the "Which heads" section of docs/results.md from the two run folders."""
    for folder, config in ((run, "heads"), (retrieval_run, "heads_retrieval")):
        if not (folder / "ranking.csv").is_file():
            raise SystemExit(f"error: {folder} has no ranking.csv: run configs/{config}.toml first")
    inp = Inputs(run, retrieval_run)
    store = run / "heads"
    from interp_heads.studies.heads_page import write_page

    write_page(inp, store, out)
    print(f"wrote {out}")
    from interp_heads.studies.heads_results import results_block
    from interp_heads.studies.seed_figure import with_section

    text = read_page(results)
    write_file(results, with_section(text, "heads", results_block(inp, store)))
    print(f"wrote the make heads section of {results}")
    return [out, results]


# --------------------------------------------------------------------------- the study
@STUDIES.register
class Heads(Study):
    name = "heads"
    summary = "which heads: cross-task specificity, known kinds, retrieval heads (docs/heads.md)"
    minutes = {"full": 20.0}

    def runs(self, size):
        small = {"n_eval": 16, "max_examples": 120} if size == "small" else {}
        return [
            StudyRun("heads", "configs/heads.toml", small),
            StudyRun("heads_retrieval", "configs/heads_retrieval.toml", small),
        ]

    def write_pages(self, folders, docs):
        return write_pages(
            folders["heads"], folders["heads_retrieval"], docs / "heads.md", docs / "results.md"
        )


if __name__ == "__main__":
    main()
