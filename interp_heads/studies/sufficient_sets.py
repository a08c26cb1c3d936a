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
ranking's TopK verdicts (necessary, sufficient) under each sweep kind.
"""

from __future__ import annotations

import pandas as pd

from interp_heads.figures.escape import md_frame
from interp_heads.store.pages import page_folder
from interp_heads.store.pages import write_page as write_file
from interp_heads.studies.base import STUDIES, TASKS_SHORT, Study, StudyRun

ABLATIONS = ("mean", "position_mean", "resample", "counterfactual")
SEARCH_ONLY = {"counterfactual": "mean"}  # a search ablation -> the kind its run sweeps with


def stacked(runs: dict, ablations, table: str) -> pd.DataFrame:
    """One table of every run (``runs``: ablation -> ``load_run`` of its folder) stacked, with the
    run's ablation: ``sufficient_sets`` (the searched and verified sets) or
    ``sufficiency_verdicts`` (the TopK verdicts at the run's ks)."""
    frames = [
        rows.assign(ablation=ablation)
        for ablation in ablations
        if (rows := runs[ablation].get(table)) is not None and len(rows)
    ]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def verdict_table(verdicts: pd.DataFrame) -> list[str]:
    """Per ablation, task and k: the ranking's TopK masked (f left of the gap to every head
    ablated: necessary at most 0.5) and kept alone (f and accuracy: sufficient at 90%)."""
    cols = ["ablation", "task", "k", "TopK masked: f", "necessary", "TopK kept alone: f",
            "accuracy", "sufficient"]  # fmt: skip
    out = ["| " + " | ".join(cols) + " |", "|---" * len(cols) + "|"]
    for r in verdicts.itertuples():
        out.append(f"| {r.ablation} | {r.task} | {int(r.k)} | {r.masked_f:.2f} | "
                   f"{'yes' if r.necessary else 'no'} | {r.kept_f:.2f} | {r.kept_mean:.2f} "
                   f"(unmasked {r.unmasked:.2f}) | {'yes' if r.sufficient else 'no'} |")  # fmt: skip
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
    # 2026-12-04, the four full-size runs one after another: counterfactual 48.6, position_mean
    # 35.2 (both sharing the machine with tests), mean 43.9 and resample 39.5 min
    minutes: dict = {"full": 167.2}
    base = "configs/sufficiency_search.toml"
    ablations = ABLATIONS
    # the kept-set sweep only at the run's ks: the verdicts side by side (the curves over MIB's
    # grid are `make sufficiency`'s, under mean ablation)
    sizes = {"small": {"tasks": TASKS_SHORT, "n_rank": 12, "n_eval": 12,
                       "sufficiency_grid": "ks"}, "full": {"sufficiency_grid": "ks"}}  # fmt: skip

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
        from interp_heads import load_run

        runs = {a: load_run(folders[f"sufficient_sets/{a}"]) for a in self.ablations}
        swept = [a for a in self.ablations if a not in SEARCH_ONLY]  # one kept-set sweep per kind
        rows = md_frame(stacked(runs, self.ablations, "sufficient_sets"))  # names as text
        verdicts = md_frame(stacked(runs, swept, "sufficiency_verdicts"))
        page_folder(docs)
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
            "## The ranking's TopK under each ablation",
            "",
            "Each run's kept-set verdicts on the eval examples (`heads/sufficiency_verdicts.csv`, "
            '`sufficiency_grid = "ks"`): the ranking\'s TopK masked, and kept alone with every '
            "other head ablated by the run's kind, on accuracy; f is the share of the gap between "
            "every head ablated and none that is left (masked) or recovered (kept).",
            "",
            *(verdict_table(verdicts) if len(verdicts) else ["(no kept-set sweep)"]),
            "",
        ]
        write_file(page, "\n".join(text) + "\n")
        return [page]
