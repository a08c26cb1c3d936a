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
  claim ks (32 of 270 heads is the paper's literal k; 8 its fraction, 32 of ~1,024).

``--param cogqa=FILE.json`` runs the same cells on a CogQA file (the study's own data): its four
panel skills (:data:`PANELS`) in the study's template, or as plain completion prompts
(``FILE.json:Skill@plain``, ``tasks.cogqa``), into ``<runs>/spec_curve_cogqa`` and
``docs/spec_curve_cogqa.md``.

RandomK draws outside TopK in no cell (``exclude_top = false``): the study's code means to but its
filter is a no-op, and a draw that does not depend on the ranking can be shared by every cell that
differs only in ranking.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from interp_heads.errors import PipelineError
from interp_heads.store.readback import read_parquet
from interp_heads.studies.base import STUDIES, Study, StudyRun

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
}
READ_KEYS = {"metric", "correct_only", "k"}  # what a read choice's options set
STUDY_END = {"ranking": "probe", "intervention": "scale", "scope": "generated", "format": "study",
             "reference": "study", "examples": "all", "k": "literal"}  # fmt: skip
CAUSAL_END = {"ranking": "ablation_atp", "intervention": "mean", "scope": "all", "format": "plain",
              "reference": "gold", "examples": "correct", "k": "literal"}  # fmt: skip
# what every run shares (the study's config is the base of each)
COMMON = {"filter_correct": False, "verify": 0, "elbow": False, "scaled_ks": [],
          "selections": ["topk", "randomk"], "exclude_top": False, "seeds": 5,
          "metrics": ["cognitive_mirrors_accuracy", "accuracy"]}  # fmt: skip
# the ranking runs' batch: ablation_atp's gradient pass keeps every layer's attention pattern, and
# on the study's ~350-token prompts 48 rows need more than the 24 GB of the 2-core machine (killed
# for memory); the probe's feature passes were no faster at 48 either (435 s against 396 s)
RANK_BATCH = 16
SIZES = {
    "small": {"tasks": 2, "n_eval": 12, "n_rank": 12, "max_examples": 40},
    "full": {"tasks": 4, "n_eval": 24, "n_rank": 24, "max_examples": 160},
}


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
    return f"{prefix}/" + "_".join(str(cell[c]) for c in generating(options))


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
    ks = sorted({o["k"] for o in options["k"].values()})  # every run sweeps every read k
    runs: dict[str, StudyRun] = {}
    for cell in cells(options, ends):
        fmt = dict(options["format"][cell["format"]])
        fmt["tasks"] = list(fmt["tasks"])[:n_tasks]
        method = options["ranking"][cell["ranking"]]
        # another method than the probe: the base config's probe keys back at their defaults
        unset = {} if method["attribution"] == "probe" else probe_defaults()
        shared = {**common, **sized, **fmt, "ks": ks, **unset}
        rank = rank_name(cell, prefix)
        if rank not in runs:
            runs[rank] = StudyRun(rank, base, {**shared, "ablation": "mean", **method,
                                               "batch_size": RANK_BATCH}, steps="attribute")  # fmt: skip
        name = run_name(cell, options, prefix)
        if name not in runs:
            changes = {**shared, **options["intervention"][cell["intervention"]],
                       **options["scope"][cell["scope"]], "attribution": method["attribution"],
                       "ranking": "{runs}/" + rank}  # fmt: skip
            runs[name] = StudyRun(name, base, changes)
    return sorted(runs.values(), key=lambda r: r.steps != "attribute")


def cell_rows(cell: dict, records: pd.DataFrame, options=OPTIONS) -> list[dict]:
    """One row per task (and k, when the cell does not choose one): the cell's TopK - RandomK on
    its metric, examples and k (read from a run's ``sweep.parquet`` records) with interval, p,
    counts and verdict."""
    from interp_heads.sweep import stats
    from interp_heads.sweep.verdict import collapse
    from interp_heads.vocab import BASELINE

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
        rows.append({
            **{c: cell[c] for c in options}, "end": cell["end"], "flipped": cell["flipped"],
            "task": r.task, "k_heads": int(r.k), "metric": metric, "baseline": r.baseline,
            "topk": r.top_mean, "randomk": r.control_mean, "effect": r.diff,
            "effect_low": r.diff_low, "effect_high": r.diff_high, "p": r.p_value,
            "n": int(r.n_examples), "draws": int(r.n_draws), "mde": float(r.mde),
            "verdict": collapse(r.diff, r.p_value, r.n_examples, r.n_draws),  # a family of
            # one: the page decides again over all its cells (spec_curve_page.decide_cells)
        })  # fmt: skip
    return rows


def curve_frame(
    folders: dict[str, Path],
    options=OPTIONS,
    ends=(STUDY_END, CAUSAL_END),
    prefix="spec_curve",
    names=("study", "causal"),
) -> pd.DataFrame:
    """Every cell's rows (:func:`cell_rows`) from the study's run folders."""
    records = {}
    rows = []
    for cell in cells(options, ends, names):
        name = run_name(cell, options, prefix)
        if name not in records:
            records[name] = read_parquet(Path(folders[name]) / "sweep.parquet")
        rows += cell_rows(cell, records[name], options)
    from interp_heads.studies.spec_curve_page import decide_cells

    return decide_cells(pd.DataFrame(rows))


@STUDIES.register
class SpecCurve(Study):
    name = "spec_curve"
    summary = "which choice decides the seed claim's verdict (docs/spec_curve.md)"
    # measured alone on 2 cores, 2026-12-05 (5,614 s; 100.4 min on 2026-12-04, partly contended)
    minutes: dict[str, float] = {"full": 48.9}  # 2 cores, 2026-12-06 (docs/cli.md, "study")
    base = "configs/cognitive_mirrors.toml"  # every run starts from the study's config
    params = {"cogqa": ""}  # a CogQA file: its four panels as the tasks of every cell
    ends = (STUDY_END, CAUSAL_END)
    common = COMMON
    sizes = SIZES

    @property
    def cogqa(self) -> str:
        """The CogQA file given (``""``: the built-in tasks); a missing one is refused."""
        path = str(self.values.get("cogqa") or "")
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
        from interp_heads.studies.spec_curve_page import INTRO, write_page

        frame = curve_frame(folders, self.options, self.ends, self.prefix)
        intro = INTRO
        if self.cogqa:
            intro = INTRO[:-1] + f"; the tasks: the CogQA file `{Path(self.cogqa).name}`'s panels."
        return write_page(frame, self.options, self.ends, docs, stem=self.prefix, intro=intro)
