"""The ``sufficiency`` step (``sufficiency = true``): how many heads each task needs.

On every task's eval split, one resumable sweep (``heads/sufficiency/``) keeps only the run's
ranking's TopK heads (every other head ablated with the run's ablation kind), keeps k random heads
(``sufficiency_seeds`` draws) and masks TopK, at MIB's kept fractions and the run's ks
(``analysis.sufficiency.kept_grid``), measured with ``sufficiency_metrics``. It writes the
records, the faithfulness curves, CPR / CMD / necessity area / minimal head set per task and the
plain-words verdicts (``heads/sufficiency*.csv``); the report draws them beside the Cognitive Mirrors figure.

With ``sufficiency_search = true`` it also searches each task's rank examples for a small
sufficient head set (``analysis.head_search``: f in the band [``sufficiency_target``,
``sufficiency_upper``], ``sufficiency_patience``, then the 1-minimality pass) and verifies it on
the eval examples beside the ranking's prefix and random kept sets of its size
(``heads/sufficient_sets.csv`` with the set's held-out ``status``, whether it is ``one_minimal``,
the ranking it is compared with and the sizes the same search finds on
``sufficiency_resamples`` resamples of the rank examples; every trial in
``heads/sufficient_search_steps.csv``).
"""

from __future__ import annotations

import math
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace

from interp_heads.analysis.sufficiency import SELECTIONS, kept_grid
from interp_heads.analysis.sufficiency_result import SufficiencyResult
from interp_heads.interventions.selections import ranked_heads
from interp_heads.pipeline.artefacts import Inputs
from interp_heads.pipeline.record import RunRecord
from interp_heads.pipeline.state import Experiment


@dataclass(frozen=True)
class SufficiencyOutput:
    """The kept-set curves and their summaries (``heads/sufficiency*``)."""

    sufficiency: SufficiencyResult


def sufficiency_step(exp: Experiment, inputs: Inputs, record: RunRecord) -> SufficiencyOutput:
    """Kept-set curves of every task's ranking, and their summaries, in ``heads/``."""
    from interp_heads.metrics import resolve_metrics
    from interp_heads.sweep.loop import run_sweep

    start, cfg, ks = time.perf_counter(), exp.config, inputs.ks
    n_total = exp.model.cfg.n_layers * exp.model.cfg.n_heads
    names = [str(m) for m in cfg.sufficiency_metrics]
    sweep_cfg = replace(
        inputs.sweep_config, ks=kept_grid(n_total, ks, cfg.sufficiency_grid),
        selections=list(SELECTIONS),
        seeds=cfg.sufficiency_seeds, metrics=names, elbow=False,
        options=inputs.sweep_config.options | {"exclude_top": False},
    )  # fmt: skip
    result = run_sweep(
        exp.model, inputs.eval_tasks, inputs.rankings, sweep_cfg, resolve_metrics(names, **cfg.options("metrics")),
        batch_size=cfg.batch_size, out_dir=exp.folder.sufficiency_sweep, force=exp.invocation.force,
        progress=not exp.invocation.quiet, **exp.invocation.sweep_options(),
    )  # fmt: skip
    rankings = {t: ranked_heads(r) for t, r in inputs.rankings.items()}
    res = SufficiencyResult(result.records, n_total, list(ks), rankings)
    folder = exp.folder
    folder.write_frame(folder.sufficiency_parquet, result.records)
    folder.write_frame(folder.sufficiency_curves_csv, res.curves())
    summary = res.summary()
    if cfg.sufficiency_grid != "mib" and "measure" in summary:  # areas over a few ks are not
        summary = summary[summary.measure == "minimal_k"].reset_index(drop=True)  # CPR / CMD
    folder.write_frame(folder.sufficiency_csv, summary)
    if "accuracy" in names:
        folder.write_frame(folder.sufficiency_verdicts_csv, res.verdicts())
    note = {"ks": sweep_cfg.ks, "seeds": sweep_cfg.seeds, "metrics": names}
    record.note(sufficiency=note)
    if cfg.sufficiency_search:
        note = {**note, "search": search_sets(exp, inputs, rankings, names)}
        record.note(sufficiency=note)
    record.timings["sufficiency"] = time.perf_counter() - start
    return SufficiencyOutput(res)


def search_sets(exp: Experiment, inputs: Inputs, rankings: dict, metrics: list[str]) -> dict:
    """Each task's searched set (rank examples), verified on its eval examples; written to
    ``heads/``. Returns the manifest's note: per task the set's size and f on the searched ones.
    Under ``counterfactual`` (``sufficiency_search_ablation``) a task without corrupted prompts
    is skipped with a note, and the set is verified on log-prob only (``verify_counterfactual``)."""
    import pandas as pd

    from interp_heads.analysis.head_search import search_heads
    from interp_heads.analysis.kept_model import COUNTERFACTUAL
    from interp_heads.analysis.search_resamples import resampled_sizes, sizes_text
    from interp_heads.analysis.sufficient_set import set_status
    from interp_heads.attribution.inputs import make_batches
    from interp_heads.attribution.memory import gradient_rows
    from interp_heads.errors import InputError
    from interp_heads.heads import head_label

    cfg, folder, tables, steps, note = exp.config, exp.folder, [], [], {}
    ablation = cfg.search_ablation
    patched = ablation == COUNTERFACTUAL
    search = dict(target=cfg.sufficiency_target, step=cfg.sufficiency_step, ablation=ablation,
                  patience=cfg.sufficiency_patience, upper=cfg.sufficiency_upper)  # fmt: skip
    stored, stored_steps = _stored_sets(exp, ablation)
    batch_size = cfg.batch_size
    for name, (rank, ev) in inputs.splits.items():
        if name in stored:  # resumed: this folder's config already searched this task
            tables.append(stored[name])
            steps.append(stored_steps[stored_steps.task == name])
            r = stored[name].iloc[0]
            note[name] = {"size": int(r.k), "status": str(r.status), "f_searched": float(r.f_searched),
                          "resumed": True}  # fmt: skip
            continue
        fmt = inputs.fmts.get(name, "auto")
        try:
            batches = make_batches(exp.model, rank, batch_size=batch_size, fmt=fmt,
                                   corrupted=patched,
                                   rows_for_width=gradient_rows(exp.model, batch_size))  # fmt: skip
            key = _search_key(rank, search, seed=cfg.seed, fmt=fmt, batch_size=batch_size)
            with _trials_bar(exp, name) as shown:
                path = _kept_search(folder, name, key, lambda batches=batches: search_heads(
                    exp.model, batches, seed=cfg.seed, on_trial=shown, **search))  # fmt: skip
        except (InputError, ValueError) as exc:  # nothing to search for; no corrupted prompts
            note[name] = {"skipped": str(exc)}
            exp.say(f"sufficiency_search: {name}: skipped: {exc}")
            continue
        with _trials_bar(exp, f"{name} resamples") as shown:
            sizes = resampled_sizes(exp.model, rank, resamples=cfg.sufficiency_resamples,
                                    seed=cfg.seed, fmt=fmt, batch_size=batch_size,
                                    corrupted=patched, on_trial=lambda r, row: shown(row, r),
                                    **search, **_kept_sizes(folder, name, key,
                                                            cfg.sufficiency_resamples))  # fmt: skip
        table = _verify(exp, inputs, name, ev, path.heads, rankings[name], metrics, ablation)
        status, reason = set_status(table, cfg.sufficiency_target, cfg.sufficiency_upper)
        heads = ",".join(head_label(*h) for h in path.heads)
        upper = math.nan if cfg.sufficiency_upper is None else cfg.sufficiency_upper
        tables.append(table.assign(
            task=name, f_searched=path.f, n_total=path.n_total, heads=heads,
            n_searched=len(rank.examples), ablation=ablation, ranking=_method(exp, inputs, name),
            status=status, status_reason=reason, one_minimal=path.one_minimal,
            patience=path.patience, target=path.target, upper=upper,
            sizes_resampled=sizes_text(sizes), n_trials=len(path.trials),
        ))  # fmt: skip
        steps.append(path.steps().assign(task=name))
        note[name] = {"size": len(path.heads), "status": status, "one_minimal": path.one_minimal,
                      "sizes_resampled": sizes, "f_searched": path.f}  # fmt: skip
        # after each task, not once at the end: a run stopped later resumes from the next task
        folder.write_frame(folder.sufficient_sets_csv, pd.concat(tables, ignore_index=True))
        folder.write_frame(folder.sufficient_steps_csv, pd.concat(steps, ignore_index=True))
    return note


@contextmanager
def _trials_bar(exp: Experiment, label: str):
    """A progress bar over a search's trials (off with ``--quiet``): ``shown(row, resample=None)``
    counts one trial and shows the heads kept after it, its f and the resample searched."""
    from tqdm.auto import tqdm

    with tqdm(desc=f"search {label}", unit=" trials", leave=False,
              disable=exp.invocation.quiet) as bar:  # fmt: skip

        def shown(row: dict, resample: int | None = None) -> None:
            kept = row["kept_before"] - (row["tried"] if row["accepted"] else 0)
            extra = {} if resample is None else {"resample": resample}
            bar.set_postfix(kept=kept, f=f"{row['f']:.2f}", **extra, refresh=False)
            bar.update(1)

        yield shown


def _search_key(rank, search: dict, **options) -> str:
    """What a kept search depends on beyond the run's config: the searched examples (ids, in
    order) and the search's options."""
    from interp_heads.store.atomic import digest

    ids = [str(e.id) for e in rank.examples]
    return digest({"examples": ids, "search": search, **options}, 32)


def _kept_search(folder, name: str, key: str, search):
    """The task's search, read back from its resume entry when one with ``key`` is there, else
    run (``search()``) and kept: a search takes minutes, a stopped run does not lose it."""
    from interp_heads import store
    from interp_heads.analysis.head_search import SearchPath

    path = folder.search_entry(name, "main")
    entry = store.read_entry(path, {"key": str, "search": dict})
    if entry is not None and entry["key"] == key:
        return SearchPath.from_entry(entry["search"])
    found = search()
    folder.make_folder(path.parent)
    store.write_entry(path, {"key": key, "search": found.to_entry()})
    return found


def _kept_sizes(folder, name: str, key: str, resamples: int) -> dict:
    """``resampled_sizes``'s ``done`` (the sizes of resamples kept with ``key``) and ``on_size``
    (keeps each new one), so that each resample's search is run once."""
    from interp_heads import store

    done = {}
    for r in range(resamples):
        entry = store.read_entry(folder.search_entry(name, f"r{r}"), {"key": str})
        if entry is not None and entry["key"] == key and "size" in entry:
            size = entry["size"]
            if size is None or (isinstance(size, int) and not isinstance(size, bool)):
                done[r] = size

    def keep(r: int, size: int | None) -> None:
        path = folder.search_entry(name, f"r{r}")
        folder.make_folder(path.parent)
        store.write_entry(path, {"key": key, "size": size})

    return {"done": done, "on_size": keep}


def _method(exp: Experiment, inputs: Inputs, name: str) -> str:
    """The name of the ranking a task's found set is compared with (its prefix of the same size)."""
    return str(getattr(inputs.rankings.get(name), "method", None) or exp.config.attribution)


def _stored_sets(exp: Experiment, ablation: str):
    """The tasks' searched and verified sets a previous call of this folder's config wrote
    (``{task: rows}``, and the search steps), so that a resumed run does not search again; none
    from a table of another ablation, or of an older search (before the band, the 1-minimality
    pass and the resamples) or another patience, band or resample count (``--force`` retires
    them)."""
    import pandas as pd

    from interp_heads.analysis.search_resamples import parse_sizes
    from interp_heads.run import Run

    folder = exp.folder
    if not (folder.sufficient_sets_csv.is_file() and folder.sufficient_steps_csv.is_file()):
        return {}, pd.DataFrame()
    run = Run(folder)  # the one reader of a run folder's tables
    sets, steps = run.need("sufficient_sets"), run.need("sufficient_steps")
    cfg = exp.config
    if not {"ablation", "one_minimal", "status", "sizes_resampled"} <= set(sets) or set(
        sets.ablation
    ) != {ablation}:
        return {}, pd.DataFrame()
    upper = math.nan if cfg.sufficiency_upper is None else cfg.sufficiency_upper
    same = (sets.patience == cfg.sufficiency_patience).all() and (
        sets.upper.fillna(math.nan).eq(upper).all() or (upper != upper and sets.upper.isna().all())
    )
    resampled = sets.sizes_resampled.map(lambda t: len(parse_sizes(t)))
    if not same or not (resampled == cfg.sufficiency_resamples).all():
        return {}, pd.DataFrame()
    return {task: g for task, g in sets.groupby("task", sort=False)}, steps


def _verify(exp: Experiment, inputs: Inputs, name, ev, heads, ranking, metrics, ablation):
    """The found set on the eval examples beside the ranking's prefix and random sets: by the
    sweep (generation and logit metrics), or teacher-forced under ``counterfactual``."""
    from interp_heads.analysis.kept_model import COUNTERFACTUAL
    from interp_heads.analysis.sufficient_set import verify_counterfactual, verify_set
    from interp_heads.store.names import safe_name

    cfg = exp.config
    if ablation == COUNTERFACTUAL:
        return verify_counterfactual(exp.model, ev, heads, ranking, seeds=cfg.sufficiency_seeds,
                                     fmt=inputs.fmts.get(name, "auto"), batch_size=cfg.batch_size,
                                     seed=cfg.seed)  # fmt: skip
    return verify_set(
        exp.model, ev, heads, ranking, seeds=cfg.sufficiency_seeds, metrics=metrics,
        max_new_tokens=cfg.max_new_tokens, fmt=inputs.sweep_config.fmt, batch_size=cfg.batch_size,
        out_dir=exp.folder.sufficient_sweeps / safe_name(name), ablation=ablation,
        force=True,  # another set's size is another grid; conditions are keyed by inputs
    )  # fmt: skip
