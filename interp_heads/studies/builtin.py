"""The project's own studies: each writes a docs page (or a section of one) from its runs.

- ``seed_figure`` (``make demo``): the Cognitive Mirrors figure on SmolLM2, literal and scaled k.
- ``heads`` (``make heads``): which heads, across tasks and against known head kinds.
- ``sufficiency`` (``make sufficiency``): how many heads each task needs.
- ``compare`` (``make compare``): the study's protocol beside the causal one, and one-choice runs.
"""

from __future__ import annotations

from pathlib import Path

from interp_heads.studies.base import STUDIES, Study, StudyRun

TASKS_SHORT = ["knowledge_recall", "math_calculation"]  # small sizes: the cheap tasks


@STUDIES.register
class SeedFigure(Study):
    name = "seed_figure"
    summary = "TopK vs RandomK at the paper's k and its fractions (docs/results.md)"
    minutes = {"full": 21.9}

    def runs(self, size):
        small = {"tasks": TASKS_SHORT, "n_eval": 24, "ks": [16, 32], "scaled_ks": []}
        return [StudyRun("demo", "configs/seed_figure.toml", small if size == "small" else {})]

    def write_pages(self, folders, docs):
        from interp_heads.report.results_page import write_page

        return write_page(
            folders["demo"], None, docs / "results.md", docs / "results_notes.md", docs / "figures"
        )


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
        from interp_heads.report.heads_inputs import write_pages

        return write_pages(
            folders["heads"], folders["heads_retrieval"], docs / "heads.md", docs / "results.md"
        )


@STUDIES.register
class Sufficiency(Study):
    name = "sufficiency"
    summary = "how many heads each task needs: TopK kept, the rest ablated (docs/results.md)"
    minutes = {"full": 14.7}

    def runs(self, size):
        small = {"tasks": TASKS_SHORT} if size == "small" else {}
        return [StudyRun("sufficiency", "configs/sufficiency.toml", small)]

    def write_pages(self, folders, docs):
        from interp_heads.report.sufficiency_results import write_section

        return write_section(folders["sufficiency"], docs / "results.md", docs / "figures")


COMPARE_VARIANTS = ["causal", "positions_all", "mean_ablation", "gold_reference"]


@STUDIES.register
class Compare(Study):
    name = "compare"
    summary = "the Cognitive Mirrors protocol beside the causal one (docs/compare.md)"
    minutes = {"full": 56.1}

    def runs(self, size):
        small = {"n_eval": 12, "seeds": 5} if size == "small" else {}
        seed = StudyRun("compare/seed", "configs/cognitive_mirrors.toml", small)
        variants = [
            StudyRun(f"compare/{v}", f"configs/compare/{v}.toml", dict(small))
            for v in COMPARE_VARIANTS
        ]
        for run in variants[1:]:  # the one-choice runs read the seed run's probe ranking
            run.changes["ranking"] = "{runs}/compare/seed"
        return [seed, *variants]

    def write_pages(self, folders, docs):
        from interp_heads.report.compare_page import write_pages

        out = Path(folders["compare/seed"]).parent
        return write_pages(out, docs / "compare.md", out / "index.html", docs / "figures")
