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

Each searched set is the patient search's, made 1-minimal, with f in the band
[0.9, 1.1]; a set is "found" only when its held-out f on log-prob and KL is in the band ("not
verified" below, "over-recovers" above), its size is shown beside the sizes the same search finds
on resampled examples, and "no set of at most half the heads" is said only of a patient search.
"""

from __future__ import annotations

import pandas as pd

from interp_heads.analysis.head_search import TARGET, UPPER
from interp_heads.analysis.search_resamples import parse_sizes, size_summary
from interp_heads.analysis.sufficient_set import FOUND, NOT_VERIFIED, OVER
from interp_heads.figures.escape import md, md_code
from interp_heads.run.manifest import Manifest
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


def found_rows(rows: pd.DataFrame, rankings: dict | None = None) -> pd.DataFrame:
    """One row per ablation and task: the found set with its search (ranking compared with,
    patience, 1-minimal, sizes on resamples), its held-out f on log-prob and KL and its
    ``status`` with the reason (``analysis.sufficient_set.set_status``; recomputed with the
    default band for a table written before the status, whose search had no band, no
    1-minimality pass and no patience unless recorded). ``rankings``: ablation -> the ranking's
    name, for tables without a ``ranking`` column."""
    from interp_heads.analysis.sufficient_set import set_status

    out = []
    for (ablation, task), g in rows.groupby(["ablation", "task"], sort=False):
        first = g[g.set == "found"].iloc[0]

        def col(name, default, first=first):
            value = first.get(name, default)
            return (
                default if value is None or (isinstance(value, float) and value != value) else value
            )

        target, upper = float(col("target", TARGET)), float(col("upper", UPPER))
        status, reason = (
            (str(first.status), str(col("status_reason", "")))
            if "status" in g and isinstance(first.status, str)
            else set_status(g, target, upper)
        )  # fmt: skip
        fs = {m: g[(g.set == "found") & (g.metric == m)] for m in ("answer_logprob", "kl_unmasked")}
        out.append({
            "ablation": ablation, "task": task,
            "ranking": str(col("ranking", (rankings or {}).get(ablation, "?"))),
            "k": int(first.k), "n_total": int(first.n_total), "f_searched": float(col("f_searched", float("nan"))),
            "patience": int(col("patience", 0)), "one_minimal": bool(col("one_minimal", False)),
            "sizes": parse_sizes(col("sizes_resampled", "")), "status": status, "reason": reason,
            **{f"f_{m}": (_interval(*f.iloc[0][["f", "f_low", "f_high"]]) if len(f) else "")
               for m, f in fs.items()},
        })  # fmt: skip
    return pd.DataFrame(out)


def patient(found: pd.DataFrame) -> bool:
    """Whether every search of ``found`` (``found_rows``) was patient and 1-minimal."""
    return bool(len(found)) and bool((found.patience > 0).all() and found.one_minimal.all())


def answer(rows: pd.DataFrame, rankings: dict | None = None) -> list[str]:
    """Sentences from the numbers: per ablation, the tasks whose found set (held out in the band)
    is at most half the heads; the sets that are small but not verified or over-recover; and
    that no set of at most half the heads was found only after a patient search."""
    if rows.empty:
        return ["- No run found a set (see each run's page: a task is skipped when ablating every "
                "head does not lower the answer's log-prob)."]  # fmt: skip
    out = []
    found = found_rows(rows, rankings)
    for ablation, g in found.groupby("ablation", sort=False):
        half = g[g.k <= g.n_total / 2]
        held = half[half.status == FOUND]
        how = (f"the patient search (patience {int(g.patience.max())}, then 1-minimal)"
               if patient(g) else "the search (without patience or the 1-minimality pass: an "
               "older run)")  # fmt: skip
        if len(held):
            said = "; ".join(f"{r.task}: {r.k} of {r.n_total} heads (held-out log-prob f "
                             f"{r.f_answer_logprob}; sizes on resamples: {size_summary(r.sizes)})"
                             for r in held.itertuples())  # fmt: skip
            out.append(f"- With `{ablation}` ablation {how} found a set of at most half the "
                       f"heads that holds on the held-out examples for {said}.")  # fmt: skip
        for r in half[half.status != FOUND].itertuples():
            verb = r.status if r.status == OVER else f"is {_status(r.status)}"
            out.append(f"- With `{ablation}` ablation {r.task}'s searched set of {r.k} of "
                       f"{r.n_total} heads (at most half) {verb} on the held-out examples: "
                       f"{md(r.reason)}.")  # fmt: skip
        if len(half):
            continue
        small = g.loc[g.k.idxmin()]
        if patient(g):
            out.append(f"- With `{ablation}` ablation {how} found no set of at most half the "
                       f"heads for any task: the smallest is {small.k} of {small.n_total} "
                       f"({small.task}); a search is not a proof that none exists.")  # fmt: skip
        else:
            out.append(f"- With `{ablation}` ablation {how} found no set of at most half the "
                       f"heads (the smallest {small.k} of {small.n_total}, {small.task}); that "
                       "says nothing on whether one exists: rerun it with the patient search.")  # fmt: skip
    return out


def _interval(f, low, high) -> str:
    return "n/a (no change to recover)" if f != f else f"{f:.2f} [{low:.2f}, {high:.2f}]"


def found_table(found: pd.DataFrame) -> list[str]:
    """Per ablation and task: the found set's size, its search, the sizes on resamples and its
    held-out status."""
    cols = ["ablation", "task", "ranking (its prefix compared)", "size", "search", "1-minimal",
            "sizes on resampled examples", "f searched", "held-out f log-prob [95% CI]",
            "held-out f KL [95% CI]", "status"]  # fmt: skip
    out = ["| " + " | ".join(cols) + " |", "|---" * len(cols) + "|"]
    for r in found.itertuples():
        status = r.status if r.status == FOUND else f"{_status(r.status)}: {md(r.reason)}"
        out.append("| " + " | ".join([
            r.ablation, r.task, md_code(r.ranking), f"{r.k} of {r.n_total}",
            f"patience {r.patience}" + (", 1-minimality pass" if r.one_minimal else ""),
            "yes" if r.one_minimal else "not checked", size_summary(r.sizes),
            f"{r.f_searched:.2f}" if r.f_searched == r.f_searched else "", r.f_answer_logprob,
            r.f_kl_unmasked, status,
        ]) + " |")  # fmt: skip
    return out


def table(rows: pd.DataFrame, rankings: dict | None = None) -> list[str]:
    """Per ablation, task, kept set and metric: the held-out f and mean, and the ranking whose
    prefix the found set is compared with."""
    cols = ["ablation", "task", "ranking", "kept set", "size", "metric", "f [95% CI]", "mean",
            "n", "draws"]  # fmt: skip
    out = ["| " + " | ".join(cols) + " |", "|---" * len(cols) + "|"]
    for r in rows.itertuples():
        ranking = getattr(r, "ranking", None)
        ranking = ranking if isinstance(ranking, str) else (rankings or {}).get(r.ablation, "?")
        out.append("| " + " | ".join([
            r.ablation, r.task, md_code(ranking), md(r.set), f"{int(r.k)} of {int(r.n_total)}",
            md(r.metric),
            _interval(r.f, r.f_low, r.f_high), f"{r.mean:.2f}", str(int(r.n_examples)),
            str(int(r.n_draws)) if r.n_draws == r.n_draws else "",
        ]) + " |")  # fmt: skip
    return out


@STUDIES.register
class SufficientSets(Study):
    name = "sufficient_sets"
    summary = "the smallest sufficient head set per task, searched, under four ablations"
    # full: not timed since the patient search (patience 8, the 1-minimality pass, 3 resamples
    # each a whole search). The 167 min of 2026-12-04 were the patience-0 search's. On retrieval
    # under mean ablation, at one torch thread beside another study: the main search 57 min (55
    # trials, before rejected trials went forward-only), its first resample 29 min (forward-only
    # rejected trials, distinct examples once); the other tasks' prompts are 4-15x shorter
    # small: 2026-12-07, shared machine (Study.minutes)
    minutes: dict = {"small": 3.4}
    base = "configs/sufficiency_search.toml"
    ablations = ABLATIONS
    # the kept-set sweep only at the run's ks: the verdicts side by side (the curves over MIB's
    # grid are `make sufficiency`'s, under mean ablation)
    # small: one cheap task under mean ablation, no resampled searches and a patience of 2 (the
    # search is what a run costs: two tasks, four ablations, 3 resamples and patience 8 took
    # more than 10 CPU-minutes for one ablation)
    sizes = {"small": {"tasks": TASKS_SHORT[:1], "n_rank": 12, "n_eval": 12,
                       "sufficiency_grid": "ks", "sufficiency_resamples": 0,
                       "sufficiency_patience": 2},
             "full": {"sufficiency_grid": "ks"}}  # fmt: skip
    small_ablations = ("mean",)

    rankings = {"position_mean": "gradxact"}  # ablation_atp cannot estimate position_mean

    def runs(self, size):
        ablations = self.small_ablations if size == "small" else self.ablations
        return [StudyRun(f"sufficient_sets/{a}", self.base, {**self.sizes[size], **self.changes(a)})
                for a in ablations]  # fmt: skip

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

        ablations = [a for a in self.ablations if f"sufficient_sets/{a}" in folders]  # as run
        runs = {a: load_run(folders[f"sufficient_sets/{a}"]) for a in ablations}
        swept = [a for a in ablations if a not in SEARCH_ONLY]  # one kept-set sweep per kind
        rows = _task_as_text(stacked(runs, ablations, "sufficient_sets"))
        verdicts = _task_as_text(stacked(runs, swept, "sufficiency_verdicts"))
        # the ranking each run compared its set with, for tables written before the column
        named = {a: (Manifest.of(runs[a].get("manifest")).config or {}).get("attribution", "?")
                 for a in ablations}  # fmt: skip
        found = found_rows(rows, named) if len(rows) else pd.DataFrame()
        page_folder(docs)
        page = docs / "sufficient_sets.md"
        text = [
            "# How many heads, answered: searched sufficient sets",
            "",
            "Generated by `interp-heads study sufficient_sets` (`interp_heads/studies/"
            "sufficient_sets.py`): on each task's rank examples heads are removed, cheapest first "
            "by attribution re-ranked on the kept model, while f on the answer's log-prob stays "
            f"in the band [{TARGET}, {UPPER}] (above it a set over-recovers), keeping up to "
            "`patience` heads whose single removal fails and going on; then a 1-minimality pass "
            "removes every head whose removal alone keeps f in the band, until none does. The set "
            "is verified on the held-out examples beside the prefix of the named ranking of the "
            "same size and random sets of that size: it is **found** only when its held-out f on "
            "log-prob and on KL falls in the band, **not verified** when one falls below the "
            "target, **over-recovers** when one is above it. Its size is shown beside the sizes "
            "the same search finds on bootstrap resamples of the searched examples.",
            "",
            "## The answer",
            "",
            *answer(rows, named),
            "",
            "## Each task's set",
            "",
            *(found_table(found) if len(found) else ["(no set found)"]),
            "",
            "### Each set per metric, beside the ranking's prefix and random sets",
            "",
            *(table(rows, named) if len(rows) else ["(no set found)"]),
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


def _status(status: str) -> str:
    """A set's status: the tool's own word as written, anything else (a hand-edited table's
    cell) as inert text."""
    return status if status in (FOUND, NOT_VERIFIED, OVER) else md(status)


def _task_as_text(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its task names as inert Markdown text (a task name is the user's text; the
    other text cells read from a run folder's CSV, statuses, reasons, kept sets, metrics and
    rankings, are escaped where the page writes them)."""
    return frame.assign(task=frame.task.map(md)) if "task" in frame else frame
