"""Rankings judged by the head sets they find: docs/head_sets.md from one run per method and task.

    interp-heads study head_sets            # docs/head_sets.md (runs under runs/head_sets)

Each attribution method that can rank a task ranks its first ``n_rank`` correctly answered
examples; the run's sufficiency step (``sufficiency = true``) keeps that ranking's TopK with every
other head mean-ablated, and masks its TopK, at MIB's kept fractions and ``ks``, beside random
kept sets, on the next ``n_eval``. Exact mean ablation's ranking (``mean_ablation``, the sweep's
own intervention) is the reference. The probe ranks every task at once (labels = tasks), so it is
one run over all of them; every other method is one run per task. Runs of one task share their
examples, so the random kept sets are generated once (the study's shared generations).

The page reads only the run folders: per task and method the necessity area, CPR and CMD with
their intervals, the minimal head set, f at ``ks``, the all-heads Spearman against the reference
(``attribution/<task>.json`` of both runs), the ranking's seconds, and whether the answer's
log-probability orders the methods as accuracy does (``studies.head_sets.page``).
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

from interp_heads.store.pages import page_folder
from interp_heads.store.pages import write_page as write_file
from interp_heads.studies.base import (
    STUDIES,
    TASKS_SHORT,
    Study,
    StudyRun,
    repo_file,
    run_minutes,
)

REFERENCE = "mean_ablation"
METHOD_NAMES = ("ablation_atp", REFERENCE, "exact", "atp", "gradxact", "headmask", "probe",
                "retrieval_score")  # fmt: skip
ANTONYMS = "data/user_tasks/antonyms.jsonl"  # the user task (a file, not a built-in)
TASKS = ("retrieval", "knowledge_recall", "math_calculation", "inference", ANTONYMS)
METRICS = ("accuracy", "answer_logprob")
# what a method cannot rank, or is not run on, and why (the page says it)
NOT_RUN = {("exact", "retrieval"): "its ranking alone passed 10 min there"}
BASE = {
    "model": "smollm2-135m", "max_examples": 96, "ks": [16], "selections": ["topk"],
    "seeds": 1, "ablation": "mean", "metrics": ["accuracy"], "max_new_tokens": 6,
    "batch_size": 16, "sufficiency": True, "sufficiency_metrics": list(METRICS),
}  # fmt: skip
SIZES = {
    "full": {"tasks": TASKS, "methods": METHOD_NAMES,
             "changes": {"n_rank": 16, "n_eval": 20, "sufficiency_seeds": 3}},
    # small: one cheap task, the default method against the reference (the kept-set sweeps are
    # what a run costs: two tasks and three methods took 9.6 CPU-minutes)
    "small": {"tasks": (TASKS_SHORT[0],), "methods": ("ablation_atp", REFERENCE),
              "changes": {"n_rank": 8, "n_eval": 10, "sufficiency_seeds": 1}},
}  # fmt: skip


def task_name(spec: str) -> str:
    """A task's name as its runs record it (a file's stem)."""
    return Path(spec).stem


def why_not(method: str, spec: str) -> str | None:
    """Why ``method`` does not rank the task ``spec`` here (None: it does)."""
    from interp_heads.attribution.methods import METHODS

    name = task_name(spec)
    if (method, name) in NOT_RUN:
        return NOT_RUN[(method, name)]
    if method == "retrieval_score" and not name.startswith("retrieval"):
        return "retrieval_score ranks the needle tasks only"
    if METHODS.get(method).corrupted == "required" and not _has_corrupted(spec):
        return f"{method} needs corrupted prompts; the task has none"
    return None


@functools.cache
def _has_corrupted(spec: str) -> bool:
    """Whether the task file ``spec`` has corrupted prompts (read once: the plan and the page
    ask for every method)."""
    from interp_heads.pipeline.loading import load_any_task

    return load_any_task(str(repo_file(spec))).has_corrupted


@STUDIES.register
class HeadSets(Study):
    """``base``: every run's config; ``sizes``: each size's tasks, methods and changes."""

    name = "head_sets"
    summary = "rankings judged by the head sets they find: necessity, CPR, CMD (docs/head_sets.md)"
    base = BASE
    sizes = SIZES
    # small: 2026-12-07, shared machine (Study.minutes); full: its runs' own minutes over 2026-12-04/05
    # (several resumed invocations, part of the time beside tests on the same 2 cores)
    minutes = {"small": 2.6, "full": 195.6}

    def runs(self, size):
        from interp_heads.attribution.methods import METHODS

        plan, out = self.sizes[size], []
        for method in plan["methods"]:
            config = {**self.base, **plan["changes"], "attribution": method}
            if METHODS.get(method).multi_task:  # one run ranks every task at once
                if len(plan["tasks"]) > 1:
                    tasks = list(plan["tasks"])
                    out.append(StudyRun(f"head_sets/{method}", {**config, "tasks": tasks}))
                continue
            for spec in plan["tasks"]:
                if why_not(method, spec) is None:
                    folder = f"head_sets/{task_name(spec)}/{method}"
                    out.append(StudyRun(folder, {**config, "tasks": [spec]}))
        return out

    def write_pages(self, folders, docs):
        from interp_heads.studies.head_sets.page import page

        manifests = {f: _manifest(p) for f, p in folders.items()}
        # the size these folders are: its methods and tasks are the ones the page speaks of
        plans = [
            p for s, p in self.sizes.items() if {r.folder for r in self.runs(s)} == set(folders)
        ]
        plans = plans or list(self.sizes.values())
        methods = {m for plan in plans for m in plan["methods"]}
        specs = {t for plan in plans for t in plan["tasks"]}
        tasks = {t for m in manifests.values() for t in m.splits or {}}
        skipped = {
            (task_name(t), m): why
            for m in methods
            for t in specs
            if task_name(t) in tasks and (why := why_not(m, t)) is not None
        }
        minutes = [run_minutes(m)[0] for m in manifests.values()]
        total = sum(m for m in minutes if m is not None and not math.isnan(m))
        page_folder(docs)
        out = docs / "head_sets.md"
        write_file(out, page(folders, REFERENCE, skipped, total))
        return [out]


def _manifest(folder: Path):
    from interp_heads.run import Manifest, Run

    return Manifest.of(Run.at(folder).need("manifest"))
