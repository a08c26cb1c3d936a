"""How many heads, answered: the smallest sufficient head set each task's search finds, under
ablations that keep the model near its distribution, side by side (docs/sufficient_sets.md).

Each ablation is one run of ``configs/sufficiency_search.toml`` (``sufficiency_search = true``):
the pooled ``mean`` (every position gets one vector, MIB's strictest test) with the default
``ablation_atp`` ranking; ``position_mean`` (each position its own mean, counted from the end
of the prompt), ranked by ``gradxact`` since ``ablation_atp`` estimates only kinds with one
replacement per head (the search itself is the same in all; only the prefix it is compared with
comes from another ranking); ``resample`` (each removed head takes its mean over one other
prompt, drawn per head), ranked by ``ablation_atp`` against resampled prompts; and
``counterfactual`` (MIB's choice: each example's own corrupted prompt), which is not a sweep kind:
its run sweeps kept sets under ``mean`` (generations shared with the mean run through the study's
store) and searches with ``sufficiency_search_ablation``, verified on log-prob only. A search
needs the run's own rank examples, so no run is given another's ranking. The page answers first
whether any task has a sufficient set of at most half the heads, then each task's set, its f on
each metric and accuracy beside the ranking's prefix and random sets of its size, then the
ranking's prefixes under each sweep kind.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from interp_heads.studies.base import STUDIES, TASKS_SHORT, Study, StudyRun

ABLATIONS = ("mean", "position_mean", "resample", "counterfactual")
SEARCH_ONLY = {"counterfactual": "mean"}  # a search ablation -> the kind its run sweeps with


def found_rows(folders: dict[str, Path], ablations=ABLATIONS) -> pd.DataFrame:
    """Every run's ``heads/sufficient_sets.csv`` with its ablation."""
    from interp_heads import load_run

    frames = []
    for ablation in ablations:
        sets = load_run(folders[f"sufficient_sets/{ablation}"]).get("sufficient_sets")
        if sets is not None and len(sets):
            frames.append(sets.assign(ablation=ablation))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def prefix_rows(folders: dict[str, Path], ablations=ABLATIONS) -> pd.DataFrame:
    """Every run's kept-set summary (``heads/sufficiency.csv``: minimal k, CPR, ...) with its
    ablation: the ranking's prefixes and random kept sets under that ablation."""
    from interp_heads import load_run

    frames = []
    for ablation in ablations:
        summary = load_run(folders[f"sufficient_sets/{ablation}"]).get("sufficiency")
        if summary is not None and len(summary):
            frames.append(summary.assign(ablation=ablation))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def prefix_table(summary: pd.DataFrame) -> list[str]:
    """Per ablation and task: the smallest prefix of the ranking and the smallest random kept set
    that reach 90% of the unmasked accuracy (or what was tried), and CPR on the answer's log-prob
    (the area under the kept-set curve) of the ranking beside random kept sets."""
    from interp_heads.report.sufficiency_section import interval_cell, minimal_cell

    cols = ["ablation", "task", "ranking prefix: minimal k (accuracy)", "random kept sets: "
            "minimal k", "CPR on log-prob: ranking", "random"]  # fmt: skip
    out = ["| " + " | ".join(cols) + " |", "|---" * len(cols) + "|"]
    for (ablation, task), g in summary.groupby(["ablation", "task"], sort=False):
        cell = {(r["measure"], r["curve"], r["metric"]): r for r in g.to_dict("records")}

        def minimal(curve, cell=cell):
            r = cell.get(("minimal_k", curve, "accuracy"))
            return "" if r is None else minimal_cell(r)

        def cpr(curve, cell=cell):
            r = cell.get(("cpr", curve, "answer_logprob"))
            return "" if r is None else interval_cell(r["value"], r["low"], r["high"], ".2f")

        out.append(f"| {ablation} | {task} | {minimal('ranking')} | {minimal('random')} | "
                   f"{cpr('ranking')} | {cpr('random')} |")  # fmt: skip
    return out


def answer(rows: pd.DataFrame) -> list[str]:
    """Sentences from the numbers: per ablation, the tasks whose found set is at most half the
    heads, with the set's size and held-out f; or that none is, with the smallest size found."""
    if rows.empty:
        return ["- No run found a set (see each run's page: a task is skipped when ablating every "
                "head does not lower the answer's log-prob)."]  # fmt: skip
    out = []
    found = rows[(rows.set == "found") & (rows.metric == "answer_logprob")]
    for ablation, g in found.groupby("ablation", sort=False):
        half = g[g.k <= g.n_total / 2]
        if len(half):
            said = "; ".join(f"{r.task}: {int(r.k)} of {int(r.n_total)} heads ({_spread(r)}held-out"
                             f" f {r.f:.2f} [{r.f_low:.2f}, {r.f_high:.2f}])"
                             for r in half.itertuples())  # fmt: skip
            out.append(f"- With `{ablation}` ablation the search found a set of at most half the "
                       "heads that keeps f on the answer's log-prob at the target on the searched "
                       f"examples for {said}.")  # fmt: skip
        else:
            small = g.loc[g.k.idxmin()]
            out.append(f"- With `{ablation}` ablation no task has a sufficient set of at most half "
                       f"the heads: the smallest found is {int(small.k)} of {int(small.n_total)} "
                       f"({small.task}).")  # fmt: skip
    return out


def _interval(f, low, high) -> str:
    return "n/a (no change to recover)" if f != f else f"{f:.2f} [{low:.2f}, {high:.2f}]"


def _spread(r) -> str:
    """``size 95% CI [low, high]; `` where the rows have it (older runs do not)."""
    low, high = getattr(r, "k_low", float("nan")), getattr(r, "k_high", float("nan"))
    return f"size 95% CI [{int(low)}, {int(high)}]; " if low == low else ""


def _size(r) -> str:
    """``k of n``; the found set's with its interval over the searched examples."""
    low, high = getattr(r, "k_low", float("nan")), getattr(r, "k_high", float("nan"))
    said = f" [{int(low)}, {int(high)}]" if r.set == "found" and low == low else ""
    return f"{int(r.k)}{said} of {int(r.n_total)}"


def table(rows: pd.DataFrame) -> list[str]:
    cols = [
        "ablation",
        "task",
        "kept set",
        "size [95% CI]",
        "metric",
        "f [95% CI]",
        "mean",
        "n",
        "draws",
    ]
    out = ["| " + " | ".join(cols) + " |", "|---" * len(cols) + "|"]
    for r in rows.itertuples():
        out.append("| " + " | ".join([
            r.ablation, r.task, r.set, _size(r), r.metric,
            _interval(r.f, r.f_low, r.f_high), f"{r.mean:.2f}", str(int(r.n_examples)),
            str(int(r.n_draws)) if r.n_draws == r.n_draws else "",
        ]) + " |")  # fmt: skip
    return out


@STUDIES.register
class SufficientSets(Study):
    name = "sufficient_sets"
    summary = "the smallest sufficient head set per task, searched, under four ablations"
    minutes = {"small": 7.6}  # measured on 2 cores (453 s, mean and position_mean); full: not yet
    base = "configs/sufficiency_search.toml"
    ablations = ABLATIONS
    sizes = {"small": {"tasks": TASKS_SHORT, "n_rank": 12,
                       "n_eval": 12}, "full": {}}  # fmt: skip

    rankings = {"position_mean": "gradxact"}  # ablation_atp cannot estimate position_mean

    def runs(self, size):
        return [StudyRun(f"sufficient_sets/{a}", self.base, {**self.sizes[size], **self.changes(a)})
                for a in self.ablations]  # fmt: skip

    def changes(self, ablation: str) -> dict:
        """The config changes of one ablation's run."""
        kind = SEARCH_ONLY.get(ablation, ablation)
        out = {"ablation": kind}
        if kind != ablation:
            out["sufficiency_search_ablation"] = ablation
        if ablation in self.rankings:
            out["attribution"] = self.rankings[ablation]
        return out

    def write_pages(self, folders, docs):
        swept = [a for a in self.ablations if a not in SEARCH_ONLY]  # one kept-set sweep per kind
        rows, prefixes = found_rows(folders, self.ablations), prefix_rows(folders, swept)
        docs.mkdir(parents=True, exist_ok=True)
        page = docs / "sufficient_sets.md"
        text = [
            "# How many heads, answered: searched sufficient sets",
            "",
            "Generated by `interp-heads study sufficient_sets` (`interp_heads/studies/"
            "sufficient_sets.py`): on each task's rank examples heads are removed, cheapest first "
            "by attribution re-ranked on the kept model, while f on the answer's log-prob stays "
            "at the target; the set found is verified on the held-out examples beside the "
            "ranking's prefix of the same size and random sets of that size. A found set's size "
            "has a 95% interval over the searched examples (resampled: each time the smallest "
            "set the search tried that keeps the target, so sets it never tried do not count).",
            "",
            "## The answer",
            "",
            *answer(rows),
            "",
            "## Each task's set",
            "",
            *(table(rows) if len(rows) else ["(no set found)"]),
            "",
            "## The ranking's prefixes under each ablation",
            "",
            "Each run's kept-set sweep on the eval examples (`heads/sufficiency.csv`): every head "
            "outside the ranking's top k (or k random heads) ablated with the run's kind, at the "
            "kept grid of `make sufficiency`.",
            "",
            *(prefix_table(prefixes) if len(prefixes) else ["(no kept-set sweep)"]),
            "",
        ]
        page.write_text("\n".join(text) + "\n", encoding="utf-8")
        return [page]
