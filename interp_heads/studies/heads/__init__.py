"""Which heads: write docs/heads.md from the two run folders of ``make heads`` (no model needed).

    interp-heads study heads   # make heads: configs/heads.toml into runs/heads,
                               # configs/heads_retrieval.toml into runs/heads_retrieval, the pages

The first run ranks the four built-in tasks, masks TopK, ExclusiveTopK and RandomK, and adds the
cross-task matrix and the split-half re-ranking (``analyses``: ``heads/specificity.csv``,
``heads/stability.csv``); its known-head step stores the detectors' scores
(``known_heads.json``). The second ranks the retrieval task by retrieval score on the same
examples and masks those heads. The pages only read the two folders; the study also writes the
"Which heads" section of docs/results.md, which ``make demo`` keeps.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from interp_heads.run import Run
from interp_heads.run.manifest import Manifest
from interp_heads.store.pages import read_page
from interp_heads.store.pages import write_page as write_file
from interp_heads.studies.base import STUDIES, TASKS_SHORT, Study, StudyRun, read_scores


class Inputs:
    """The two run folders' rankings, splits, known-head scores and retrieval ranking."""

    def __init__(self, run: Path, retrieval_run: Path):
        self.run, self.retrieval_run = run, retrieval_run
        self.manifest = Manifest.of(Run.at(run).need("manifest"))
        ranking = Run.at(run).need("ranking").sort_values(["task", "rank"])
        self.rankings = {
            t: [(int(layer), int(head)) for layer, head in zip(g["layer"], g["head"], strict=True)]
            for t, g in ranking.groupby("task", sort=False)
        }
        self.rankings = {t: self.rankings[t] for t in self.manifest.splits}
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


def write_pages(run: Path, retrieval_run: Path, out: Path, results: Path) -> list[Path]:
    """docs/heads.md and the "Which heads" section of docs/results.md from the two run folders."""
    for folder, config in ((run, "heads"), (retrieval_run, "heads_retrieval")):
        if not (folder / "ranking.csv").is_file():
            raise SystemExit(f"error: {folder} has no ranking.csv: run configs/{config}.toml first")
    inp = Inputs(run, retrieval_run)
    store = run / "heads"
    from interp_heads.studies.heads.page import write_page

    write_page(inp, store, out)
    print(f"wrote {out}")
    from interp_heads.studies.heads.results import results_block
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
    # small: 2026-12-07, shared machine (Study.minutes); full: on 2 cores
    minutes = {"small": 3.8, "full": 20.0}

    def runs(self, size):
        if size != "small":
            return [StudyRun("heads", "configs/heads.toml"),
                    StudyRun("heads_retrieval", "configs/heads_retrieval.toml")]  # fmt: skip
        # small: the two cheap tasks (ranking retrieval's long prompts by ablation_atp alone took
        # 10 min on one core), few rows, one stability k; retrieval heads on 8 + 12 rows
        rows = {"max_examples": 64, "n_rank": 8, "n_eval": 12}
        return [
            StudyRun("heads", "configs/heads.toml",
                     {"tasks": TASKS_SHORT, "stability_ks": [8], **rows}),
            StudyRun("heads_retrieval", "configs/heads_retrieval.toml", rows),
        ]  # fmt: skip

    def write_pages(self, folders, docs):
        return write_pages(
            folders["heads"], folders["heads_retrieval"], docs / "heads.md", docs / "results.md"
        )
