"""The specification curve of the seed claim: which choice decides the verdict.

The Cognitive Mirrors protocol and this toolkit's causal protocol differ in seven choices at once
(:data:`OPTIONS`). Each cell of this study is one protocol: both ends (:data:`STUDY_END`,
:data:`CAUSAL_END`) and every protocol one choice away from either end, so the swapped cells (the
probe's ranking under the causal protocol, the causal ranking under the study's) are among them.
A cell's verdict is the seed claim on one task: TopK collapses the task against RandomK (TopK
below RandomK with the Holm-adjusted p of the exact test over the page's cells,
``sweep.verdict``; the 3x drop ratio is a secondary reading) (Simonsohn, Simmons & Nelson 2020
for the display).

Nothing is computed twice. Choices split in two:

- **generating** (ranking, intervention, scope, format): a cell needs generations of its own;
  each distinct combination is one run. Rankings are made once per (method, format) by
  attribute-only runs and given to every run that masks them (``ranking =``), so the probe is
  trained once per format and ``ablation_atp`` (which estimates a mean ablation) can rank for a
  scale mask too.
- **read** (reference, examples, k): a cell reads another metric, a subset of examples or another
  k of a run's stored records. Every run scores both references, evaluates every example (the
  correctly answered subset is a filter on the unmasked condition's gold accuracy) and sweeps both
  claim ks (the paper's k literally and as a fraction: ``studies.protocols.paper_k_text``).

``--param cogqa=FILE.json`` runs the same cells on a CogQA file (the study's own data): its four
panel skills (:data:`PANELS`) in the study's template, or as plain completion prompts
(``FILE.json:Skill@plain``, ``tasks.cogqa``), into ``<runs>/spec_curve_cogqa`` and
``docs/spec_curve_cogqa.md``.

RandomK's pool is a choice of its own (``pool``: outside TopK, as both protocols draw it and as
the study's code means to though its filter is a no-op, or every head, ``exclude_top = false``, a
draw that every cell differing only in ranking shares). The ends are the protocols as
``studies.protocols`` defines them, once for both pages.

Beside the one-at-a-time cells, a **full factorial** around each end (:func:`factorial_cells`):
every combination of ranking, intervention, scope, RandomK pool and k (:data:`FACTORIAL`), the
end's format, reference and examples kept: 2 x 24 generating runs, each read at k = 32 and 8
(Simonsohn et al.'s multiverse: interactions, not one choice at a time). A run both designs need
is one run; the pool-``all`` runs keep the folders they had before the pool was a choice
(:data:`FOLDER_DEFAULTS`), so a study run before resumes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from interp_heads.errors import PipelineError
from interp_heads.run import Run
from interp_heads.studies.base import STUDIES, Study, StudyRun
from interp_heads.studies.protocols import CAUSAL, STUDY

STUDY_TASKS = [f"data/cognitive_mirrors/{t}.jsonl" for t in
               ("retrieval", "knowledge_recall", "math_calculation", "inference")]  # fmt: skip
PLAIN_TASKS = ["retrieval", "knowledge_recall", "math_calculation", "inference"]
PANELS = ("Retrieval", "Knowledge Recall", "Math Calculation", "Inference")  # the paper's figure

# choice -> option -> what it sets: config values (generating choices) or what a cell reads
OPTIONS: dict[str, dict[str, dict]] = {
    "ranking": {  # the probe: the study's own (configs/cognitive_mirrors.toml's probe_* keys)
        "probe": {"attribution": "probe"},
        "ablation_atp": {"attribution": "ablation_atp", "ablation": "mean"},
    },
    "intervention": {
        "scale": {"ablation": "scale", "scale_factor": 1e-4},
        "mean": {"ablation": "mean"},
    },
    "scope": {
        "generated": {"positions": "generated"},
        "last": {"positions": "last"},
        "all": {"positions": "all"},
    },
    "format": {
        "study": {"tasks": STUDY_TASKS, "max_new_tokens": 32},
        "plain": {"tasks": PLAIN_TASKS, "max_new_tokens": 6},
    },
    "reference": {
        "study": {"metric": "cognitive_mirrors_accuracy"},
        "gold": {"metric": "accuracy"},
    },
    "examples": {"all": {"correct_only": False}, "correct": {"correct_only": True}},
    "k": {"literal": {"k": 32}, "fractions": {"k": 8}},
    "pool": {"outside": {"exclude_top": True}, "all": {"exclude_top": False}},  # RandomK's
}
READ_KEYS = {"metric", "correct_only", "k"}  # what a read choice's options set
# each format option's prompt format (the task files declare it), which a metric may not score
FMTS = {"study": "cognitive_mirrors", "plain": "plain"}
STUDY_END, CAUSAL_END = STUDY, CAUSAL  # one definition of each (studies.protocols)
# the full factorial around each end: every combination of these choices, the end's others kept
FACTORIAL = ("ranking", "intervention", "scope", "pool", "k")
# an option a run folder's name leaves out: the runs made before the choice existed keep theirs
FOLDER_DEFAULTS = {"pool": "all"}
# what every run shares (the study's config is the base of each)
COMMON = {"filter_correct": False, "verify": 0, "elbow": False, "scaled_ks": [],
          "selections": ["topk", "randomk"], "seeds": 5,
          "metrics": ["cognitive_mirrors_accuracy", "accuracy"]}  # fmt: skip
# the ranking runs' batch: ablation_atp's gradient pass keeps every layer's attention pattern, and
# on the study's ~350-token prompts 48 rows need more than the 24 GB of the 2-core machine (killed
# for memory); the probe's feature passes were no faster at 48 either (435 s against 396 s)
RANK_BATCH = 16
# ``tasks``: the first n of the format's tasks, or a tuple of their indexes; ``generating``:
# whether the cells that flip a generating choice (each its own run) and the full factorial are
# planned. The small size is a first look in minutes: the two ends' runs on the two cheap tasks
# (the probe needs two labels), 12 rows (10 examples and 5 draws decide), and the cells that
# flip a read choice (reference, examples, k), which read those runs' stored records.
SIZES = {
    "small": {"tasks": (1, 2), "n_eval": 12, "n_rank": 8, "max_examples": 40,
              "generating": False},
    "full": {"tasks": 4, "n_eval": 24, "n_rank": 24, "max_examples": 160, "generating": True},
}  # fmt: skip


def pick_tasks(tasks, which) -> list:
    """The first ``which`` of ``tasks`` (an int), or those at the indexes ``which`` (a tuple)."""
    tasks = list(tasks)
    return tasks[:which] if isinstance(which, int) else [tasks[i] for i in which]


def probe_defaults() -> dict:
    """The config's probe options at their defaults (a base config sets the study's)."""
    from interp_heads.attribution.methods import METHODS

    return {f.name: f.default for f in METHODS.own_options(METHODS.get("probe"))}


def cells(options=OPTIONS, ends=(STUDY_END, CAUSAL_END), names=("study", "causal")) -> list[dict]:
    """Each end and every protocol one choice away from it, each once, with ``end`` (the name of
    the end it is one choice from; an end is its own) and ``flipped`` (the choice changed, or
    "")."""
    out, seen = [], set()
    for end_name, end in zip(names, ends, strict=True):
        for choice in ("", *options):
            for option in options[choice] if choice else [end.get(choice)]:
                cell = {**end, **({choice: option} if choice else {})}
                if (choice and option == end[choice]) or tuple(cell.items()) in seen:
                    continue
                seen.add(tuple(cell.items()))
                out.append({**cell, "end": end_name, "flipped": choice})
    return out


def read_cells(
    options=OPTIONS, ends=(STUDY_END, CAUSAL_END), names=("study", "causal")
) -> list[dict]:
    """The ends and the cells that flip a read choice only: no run beyond the ends' own."""
    flips = set(generating(options))
    return [c for c in cells(options, ends, names) if c["flipped"] not in flips]


def factorial_cells(options=OPTIONS, ends=(STUDY_END, CAUSAL_END), names=("study", "causal"),
                    factorial=FACTORIAL) -> list[dict]:  # fmt: skip
    """Around each end, every combination of the ``factorial`` choices' options with the end's
    other choices kept (its format, reference, examples), each with ``end``, ``flipped`` (the
    choices that differ from the end, comma-separated) and ``design = "factorial"``."""
    from itertools import product

    out = []
    varied = [c for c in factorial if c in options]
    for end_name, end in zip(names, ends, strict=True):
        for combo in product(*(list(options[c]) for c in varied)):
            cell = {**end, **dict(zip(varied, combo, strict=True))}
            differ = ",".join(c for c in varied if cell[c] != end[c])
            out.append({**cell, "end": end_name, "flipped": differ, "design": "factorial"})
    return out


def generating(options: dict) -> list[str]:
    """The choices whose options set config values (a cell needs generations of its own); the
    others (:data:`READ_KEYS`) say what a cell reads of a run's stored records."""
    return [c for c in options if not set(next(iter(options[c].values()))) <= READ_KEYS]


def read(cell: dict, options: dict, key: str, default=None):
    """What ``cell`` reads for ``key`` (``metric``, ``correct_only``, ``k``), else ``default``."""
    made = generating(options)
    for choice in options:
        if choice not in made and key in options[choice][cell[choice]]:
            return options[choice][cell[choice]][key]
    return default


def run_name(cell: dict, options=OPTIONS, prefix: str = "spec_curve") -> str:
    """The run folder (under the study's folder) holding a cell's generations."""
    return f"{prefix}/" + "_".join(
        str(cell[c]) for c in generating(options) if FOLDER_DEFAULTS.get(c) != cell[c]
    )


def rank_name(cell: dict, prefix: str = "spec_curve") -> str:
    """The attribute-only run folder holding a cell's ranking."""
    return f"{prefix}/rank_{cell['ranking']}_{cell['format']}"


def cogqa_options(path: str, options=OPTIONS) -> dict:
    """``options`` with both formats reading a CogQA file's :data:`PANELS`: the study's template
    (``FILE.json:Skill``) or the same sub-questions as plain completion prompts
    (``FILE.json:Skill@plain``). Both take the study's 32 new tokens: a CogQA answer is often a
    sentence, not the built-in tasks' word, so the format choice changes the prompt only."""
    study = [f"{path}:{skill}" for skill in PANELS]
    return {**options, "format": {
        "study": {"tasks": study, "max_new_tokens": 32},
        "plain": {"tasks": [f"{t}@plain" for t in study], "max_new_tokens": 32},
    }}  # fmt: skip


def plan_runs(
    size: str,
    base: str,
    options=OPTIONS,
    ends=(STUDY_END, CAUSAL_END),
    common=COMMON,
    sizes=SIZES,
    prefix: str = "spec_curve",
) -> list[StudyRun]:
    """The attribute-only ranking runs first, then one run per distinct generating choice."""
    sized = dict(sizes[size])
    n_tasks = sized.pop("tasks")
    every = sized.pop("generating", True)
    planned = cells(options, ends) if every else read_cells(options, ends)
    planned += factorial_cells(options, ends) if every else []
    ks = sorted({o["k"] for o in options["k"].values()})  # every run sweeps every read k
    runs: dict[str, StudyRun] = {}
    for cell in planned:
        fmt = dict(options["format"][cell["format"]])
        fmt["tasks"] = pick_tasks(fmt["tasks"], n_tasks)
        method = options["ranking"][cell["ranking"]]
        # another method than the probe: the base config's probe keys back at their defaults
        unset = {} if method["attribution"] == "probe" else probe_defaults()
        shared = {**common, **sized, **fmt, "ks": ks, **unset}
        rank = rank_name(cell, prefix)
        if rank not in runs:
            # exclude_top as the ranking runs had it before the pool was a choice (they do not
            # sweep: it changes nothing but their config digest, which resuming them checks)
            runs[rank] = StudyRun(rank, base, {**shared, "ablation": "mean", **method,
                                               "batch_size": RANK_BATCH, "exclude_top": False},
                                  steps="attribute")  # fmt: skip
        name = run_name(cell, options, prefix)
        if name not in runs:
            chosen = [options[c][cell[c]] for c in generating(options)
                      if c not in ("ranking", "format")]  # intervention, scope, pool  # fmt: skip
            changes = {**shared, **{k: v for o in chosen for k, v in o.items()},
                       "attribution": method["attribution"], "ranking": "{runs}/" + rank}  # fmt: skip
            runs[name] = StudyRun(name, base, changes)
    return sorted(runs.values(), key=lambda r: r.steps != "attribute")


def cell_rows(cell: dict, records: pd.DataFrame, options=OPTIONS) -> list[dict]:
    """One row per task (and k, when the cell does not choose one): the cell's TopK - RandomK on
    its metric, examples and k (read from a run's ``sweep.parquet`` records) with interval, p,
    counts and verdict: "undecided: <reason>" where the metric cannot score the cell's format or
    its unmasked score is below the metric's floor (``metrics.scorable``)."""
    from interp_heads.choices import BASELINE
    from interp_heads.metrics.scorable import scorable
    from interp_heads.sweep import stats
    from interp_heads.sweep.verdict import collapse

    metric = read(cell, options, "metric", "accuracy")
    k = read(cell, options, "k")
    recs = records[records.metric == metric]
    recs = recs if k is None else recs[recs.k.isin([0, k])]
    if read(cell, options, "correct_only", False):
        gold = records[(records.selection == BASELINE) & (records.metric == "accuracy")]
        right = set(gold[gold.value >= 1].example_id)
        recs = recs[recs.example_id.isin(right)]
    sig = stats.significance(recs, top="TopK")
    sig = sig[sig.control == "RandomK"] if len(sig) else sig
    rows = []
    for r in sig.itertuples():
        # why the cell's metric cannot judge it (None: it can), also kept as a column of its own
        why = scorable(metric, FMTS.get(cell.get("format")), r.baseline)
        rows.append({
            **{c: cell[c] for c in options}, "end": cell["end"], "flipped": cell["flipped"],
            "design": cell.get("design", "one"),
            "task": r.task, "k_heads": int(r.k), "metric": metric, "baseline": r.baseline,
            "topk": r.top_mean, "randomk": r.control_mean, "effect": r.diff,
            "effect_low": r.diff_low, "effect_high": r.diff_high, "p": r.p_value,
            "n": int(r.n_examples), "draws": int(r.n_draws), "mde": float(r.mde),
            "undecided": why,
            "verdict": collapse(r.diff, r.p_value, r.n_examples, r.n_draws, undecided=why),
            # a family of one: the page decides again over all its cells (decide_cells)
        })  # fmt: skip
    return rows


def curve_frame(
    folders: dict[str, Path],
    options=OPTIONS,
    ends=(STUDY_END, CAUSAL_END),
    prefix="spec_curve",
    names=("study", "causal"),
    factorial: tuple[str, ...] = (),
    generating: bool = True,
) -> pd.DataFrame:
    """Every cell's rows (:func:`cell_rows`) from the study's run folders; with ``factorial``
    (the study's :data:`FACTORIAL`) the full factorial's cells too (``design = "factorial"``);
    without ``generating`` only the ends and the cells that flip a read choice."""
    records = {}
    rows = []
    more = factorial_cells(options, ends, names, factorial) if factorial else []
    some = cells(options, ends, names) if generating else read_cells(options, ends, names)
    for cell in some + more:
        name = run_name(cell, options, prefix)
        if name not in records:
            records[name] = Run.at(folders[name]).need("records")
        rows += cell_rows(cell, records[name], options)
    from interp_heads.studies.spec_curve.page import decide_cells

    return decide_cells(pd.DataFrame(rows))


@STUDIES.register
class SpecCurve(Study):
    name = "spec_curve"
    summary = "which choice decides the seed claim's verdict (docs/spec_curve.md)"
    # not timed since the factorial: before it (16 runs) 48.9 min alone on 2 cores, 2026-12-06;
    # the factorial's conditions those runs do not hold are estimated at 52 min more
    # (python -m bench.checks.spec_curve_generations --estimate), so about 100-110 min from nothing
    # small: 2026-12-07, shared machine (Study.minutes); full not timed (above)
    minutes: dict[str, float] = {"small": 4.7}
    base = "configs/cognitive_mirrors.toml"  # every run starts from the study's config

    @dataclass(frozen=True)
    class Options:
        cogqa: str = field(default="", metadata={
            "help": "a CogQA file: its four panels as the tasks of every cell"})  # fmt: skip

    ends = (STUDY_END, CAUSAL_END)
    common = COMMON
    sizes = SIZES

    @property
    def cogqa(self) -> str:
        """The CogQA file given (``""``: the built-in tasks); a missing one is refused."""
        path = self.params.cogqa
        if path and not Path(path).is_file():
            raise PipelineError(f"study {self.name}: no CogQA file {path!r}")
        return path

    @property
    def options(self) -> dict:
        return cogqa_options(self.cogqa) if self.cogqa else OPTIONS

    @property
    def prefix(self) -> str:
        """The runs' folder under the runs folder, and the page's name."""
        return "spec_curve_cogqa" if self.cogqa else "spec_curve"

    def runs(self, size):
        return plan_runs(size, self.base, self.options, self.ends, self.common, self.sizes,
                         self.prefix)  # fmt: skip

    def write_pages(self, folders, docs):
        from interp_heads.studies.spec_curve.page import write_page

        # every cell where its runs were planned; the small size plans the ends' runs only
        planned = all(run_name(c, self.options, self.prefix) in folders
                      for c in cells(self.options, self.ends) + factorial_cells(self.options, self.ends))  # fmt: skip
        factorial = FACTORIAL if planned else ()
        frame = curve_frame(folders, self.options, self.ends, self.prefix, factorial=factorial,
                            generating=planned)  # fmt: skip
        return write_page(frame, self.options, self.ends, docs, stem=self.prefix,
                          intro=self.intro(planned),
                          protocols=self.protocol_lines(), factorial=factorial)  # fmt: skip

    def intro(self, planned: bool) -> str:
        """The page's opening sentence: what a cell is, the CogQA file when one gave the tasks,
        and what a small run leaves out (``planned``: every cell's runs were planned)."""
        from interp_heads.studies.spec_curve.page import INTRO

        intro = INTRO[:-1]
        if self.cogqa:
            intro += f"; the tasks: the CogQA file `{Path(self.cogqa).name}`'s panels"
        if not planned:
            intro += (" (here `--size small`: the two ends and the cells that flip a read choice; "
                      "the generating choices and the factorial need `--size full`)")  # fmt: skip
        return intro + "."

    def protocol_lines(self) -> list[str]:
        """What opens the page: the two protocols, once defined (``studies.protocols``), and
        what this page runs differently from docs/compare.md."""
        from interp_heads.studies.protocols import (
            definition_lines,
            page_differences,
            paper_k_text,
        )

        return [
            "## The two protocols, and what this page runs differently",
            "",
            *definition_lines(dict(zip(("study", "causal"), self.ends, strict=True))),
            "",
            *page_differences(
                self.sizes, self.common, [o["k"] for o in self.options["k"].values()]
            ),  # fmt: skip
            "",
            paper_k_text(),
        ]
