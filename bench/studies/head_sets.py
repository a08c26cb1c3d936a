"""Rankings judged by the head sets they find: necessity area, CPR, CMD, minimal k.

A ranking is for finding head sets, so each method that can rank a task is judged by the sets its
order gives, against exact mean ablation's ranking (``mean_ablation``, the sweep's own
intervention) as the reference. For each task (the four built-in ones and the user antonym task)
the first ``--n-rank`` correctly answered examples are ranked by every method and the next
``--n-eval`` are evaluated (the probe is trained once on the five tasks' rank splits, labels =
tasks, as a run's probe step does, whichever ``--tasks`` are judged); for each ranking,
``interp_heads.sufficiency`` keeps its TopK (every other head mean-ablated) and masks its TopK at
MIB's kept fractions and ``--ks``, beside random kept sets (``--seeds`` draws: the same draws for
every ranking of a task, so they are computed once). Per task and method it records:

- ``necessity_area`` (lower is better), ``cpr`` (higher), ``cmd`` (lower), each with its 95%
  bootstrap interval, for accuracy and the answer's log-probability;
- ``minimal_k``: the smallest kept k reaching 90% of the unmasked accuracy, with its interval;
- ``spearman``: the order's agreement with the reference over all heads (secondary);
- the targets a ranking should meet: ``cpr_gap`` (CPR minus the reference's; within 0.05 wanted),
  ``minimal_k_steps`` (grid steps above the reference's minimal k; at most 1 wanted), and per
  task whether the answer log-probability's f agrees with accuracy's f at each of ``--ks`` in
  sign and in the order of the methods (``logit_vs_accuracy_<task>``).

Rankings and conditions are stored under ``--cache`` and resumed (by their resume keys).
Writes ``bench/results/head_sets.json``.

    .venv/bin/python python -m bench.studies.head_sets --tasks inference --n-rank 16 --n-eval 20
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import time
import warnings
from pathlib import Path

from bench.common import USER_TASK, result_path
from bench.studies.head_sets_report import headline, logit_agrees, markdown
from interp_heads.analysis.head_sets import sufficiency
from interp_heads.analysis.sufficiency import kept_grid
from interp_heads.attribution import attribute_heads
from interp_heads.attribution.methods import METHODS
from interp_heads.attribution.scores import load_stored
from interp_heads.attribution.stability import spearman
from interp_heads.errors import InputError
from interp_heads.tasks.schema import BUILTIN_TASKS

OUT = result_path("head_sets.json")
TASKS = (*BUILTIN_TASKS, "antonyms")
REFERENCE = "mean_ablation"
METHOD_NAMES = ("ablation_atp", REFERENCE, "exact", "atp", "gradxact", "headmask", "probe",
                "retrieval_score")  # fmt: skip
METRICS = ("accuracy", "answer_logprob")


def rank_all(model, rank_task, methods=METHOD_NAMES, batch_size: int = 8, *, cache=None,
             given=None) -> dict:  # fmt: skip
    """``{method: (HeadScores or None, seconds, why not)}``: each method's ranking of the task,
    or the one-line reason it cannot rank it (no corrupted prompts, not a needle task, ...).

    ``given``: rankings made elsewhere (the probe's, over all tasks at once); ``cache``: a folder
    the rankings are stored in and read back from when their resume key matches (same model,
    examples, prompts, method and settings)."""
    out = {}
    for name in methods:
        if given and name in given:
            out[name] = given[name]
            continue
        if METHODS.get(name).multi_task:
            out[name] = (None, 0.0, f"{name} ranks several tasks at once (give two or more tasks)")
            continue
        if name == "retrieval_score" and not rank_task.name.startswith("retrieval"):
            out[name] = (None, 0.0, "retrieval_score ranks the needle tasks only")
            continue
        key = _key(model, [rank_task], name, batch_size=batch_size)
        stored = _stored(cache, rank_task, name, key)
        if stored is not None:
            out[name] = (stored, float(stored.provenance.get("seconds", 0.0)), "")
            continue
        t0 = time.perf_counter()
        try:
            scores = attribute_heads(model, rank_task, name, batch_size=batch_size)
        except (InputError, ValueError) as exc:
            out[name] = (None, 0.0, str(exc).splitlines()[0])
            continue
        _store(cache, rank_task, name, scores, key)
        out[name] = (scores, time.perf_counter() - t0, "")
    return out


def probe_rankings(model, ranks: list, batch_size: int = 8, cache=None) -> dict:
    """``{task: {"probe": (HeadScores, seconds, "")}}``: the probe trained once on every task's
    rank split (labels = tasks), as a run's ``probe`` step does; ``{}`` for fewer than 2 tasks."""
    if len(ranks) < 2:
        return {}
    key = _key(model, ranks, "probe", batch_size=batch_size)
    stored = {t.name: _stored(cache, t, "probe", key) for t in ranks}
    if any(s is None for s in stored.values()):
        from interp_heads.attribution.probe import probe_heads
        from interp_heads.tasks import resolve_format

        fmts = {t.name: resolve_format(model, t)[0] for t in ranks}
        stored = probe_heads(model, ranks, fmts, batch_size=batch_size)
        for t in ranks:
            _store(cache, t, "probe", stored[t.name], key)
    return {
        name: {"probe": (s, float(s.provenance.get("seconds", 0.0)), "")}
        for name, s in stored.items()
    }


def _key(model, tasks: list, method: str, **settings) -> str:
    """The resume key of a ranking (``store.resume``, as the pipeline's attribution steps): the
    model, every ranked task's rows and prompts, the method and its settings."""
    from interp_heads.pipeline.baseline_step import rows_key
    from interp_heads.store import resume

    rows = "|".join(f"{t.name}:{rows_key(model, t, t.fmt)}" for t in tasks)
    return resume.attribution_key(resume.model_fingerprint(model), rows, method=method, **settings)


def _ranking_path(cache, task, method: str):
    return None if cache is None else Path(cache) / task.name / "rankings" / f"{method}.json"


def _stored(cache, task, method: str, key: str):
    """The stored ranking of ``task`` by ``method`` when its resume key is ``key``."""
    path = _ranking_path(cache, task, method)
    return None if path is None else load_stored(path, key)


def _store(cache, task, method: str, scores, key: str) -> None:
    path = _ranking_path(cache, task, method)
    if path is not None:
        scores.provenance["resume_key"] = key
        scores.save(path)


def judge(model, eval_task, rankings: dict, *, ks=(16,), seeds: int = 3, metrics=METRICS,
          cache=None, n_boot: int = 1000, max_new_tokens: int = 6, batch_size: int = 16) -> list:  # fmt: skip
    """One row per method that ranked the task: its head-set measures beside the reference's."""
    rows, n_total = [], model.cfg.n_layers * model.cfg.n_heads
    grid = kept_grid(n_total, ks)
    for name, (scores, seconds, why) in rankings.items():
        row = {"task": eval_task.name, "method": name, "rank_seconds": round(seconds, 2)}
        if scores is None:
            rows.append({**row, "skipped": why})
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # random draws equal to the ranking's at tiny k
            res = sufficiency(
                model, eval_task, scores, ks=ks, seeds=seeds, metrics=list(metrics),
                max_new_tokens=max_new_tokens, batch_size=batch_size, n_boot=n_boot,
                out_dir=None if cache is None else Path(cache) / eval_task.name,
            )  # fmt: skip
        row |= _measures(res.summary()) | _f_at(res.curves(), ks)
        rows.append(row)
    ref = next((r for r in rows if r["method"] == REFERENCE and "skipped" not in r), None)
    for row in rows:
        if "skipped" in row or ref is None:
            continue
        scores = rankings[row["method"]][0]
        row["spearman"] = round(spearman(scores, rankings[REFERENCE][0]), 4)
        row["cpr_gap"] = _gap(row.get("accuracy_cpr"), ref.get("accuracy_cpr"))
        row["minimal_k_steps"] = _steps(row.get("minimal_k"), ref.get("minimal_k"), grid)
    return rows


def _measures(summary) -> dict:
    """The summary's ranking rows as flat keys (``accuracy_cpr``, ``accuracy_cpr_low`` ...)."""
    out = {}
    for r in summary[summary.curve.isin(["ranking", "necessity"])].itertuples(index=False):
        key = "minimal_k" if r.measure == "minimal_k" else f"{r.metric}_{r.measure}"
        for suffix, value in (("", r.value), ("_low", r.low), ("_high", r.high)):
            out[key + suffix] = None if value != value else round(float(value), 4)
    rand = summary[(summary.curve == "random") & (summary.measure == "cpr")]
    for r in rand.itertuples(index=False):
        out[f"{r.metric}_random_cpr"] = None if r.value != r.value else round(float(r.value), 4)
    return out


def _f_at(curves, ks) -> dict:
    """The ranking's kept-set f at each of ``ks`` per metric (``f_accuracy_k16`` ...)."""
    c = curves[(curves.curve == "ranking") & curves.k.isin(list(ks))]
    return {f"f_{r.metric}_k{r.k}": None if r.f != r.f else round(float(r.f), 4)
            for r in c.itertuples(index=False)}  # fmt: skip


def _gap(a, b):
    return None if a is None or b is None else round(a - b, 4)


def _steps(k, k_ref, grid: list[int]):
    """How many grid steps ``k`` lies above ``k_ref`` (negative: below)."""
    if k is None or k_ref is None or math.isnan(k) or math.isnan(k_ref):
        return None
    return grid.index(int(k)) - grid.index(int(k_ref))


def task_split(model, name: str, n_rank: int, n_eval: int, max_examples: int = 96):
    """The task's correctly answered examples (of its first ``max_examples``), split in two."""
    from interp_heads.pipeline.loading import load_any_task
    from interp_heads.tasks import filter_correct, resolve_format

    task = load_any_task(USER_TASK if name == "antonyms" else name)
    fmt = resolve_format(model, task)[0]
    task = filter_correct(model, task.subset(n=max_examples), fmt=fmt).subset(n=n_rank + n_eval)
    return task.split(n_rank)


def merge(rows: list[dict], meta: dict, out: Path = OUT) -> dict:
    """Replace the rows of the same task and method in ``out`` (JSON), keep the others, and
    record per task whether the log-prob f agrees with the accuracy f at each of ``meta["ks"]``
    (``logit_vs_accuracy_<task>``, from all of the task's rows). Returns what was written."""
    old = json.loads(out.read_text()) if out.exists() else {"rows": []}
    done = {(r["task"], r["method"]) for r in rows}
    merged = [r for r in old.get("rows", []) if (r["task"], r["method"]) not in done] + rows
    data = {k: v for k, v in old.items() if not k.startswith("logit_vs_accuracy_")} | meta
    for task in dict.fromkeys(r["task"] for r in merged):
        mine = [r for r in merged if r["task"] == task and "skipped" not in r]
        data[f"logit_vs_accuracy_{task}"] = [
            logit_agrees(mine, k) | {"task": task} for k in meta.get("ks", [])
        ]
    data["rows"] = merged
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1) + "\n")
    return data


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--tasks", nargs="+", default=list(TASKS))
    p.add_argument("--methods", nargs="+", default=list(METHOD_NAMES))
    p.add_argument("--n-rank", type=int, default=16)
    p.add_argument("--n-eval", type=int, default=20)
    p.add_argument("--ks", type=int, nargs="+", default=[16])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--cache", default="runs/head_sets")
    p.add_argument("--out", default=str(OUT))
    p.add_argument("--markdown", action="store_true", help="print the table of --out and stop")
    args = p.parse_args(argv)
    if args.markdown:
        data = json.loads(Path(args.out).read_text())
        print(headline(data) + "\n\n" + markdown(data))
        return
    from interp_heads.models.load import load_model

    model = load_model(args.model)
    probe_tasks = list(dict.fromkeys([*TASKS, *args.tasks])) if "probe" in args.methods else []
    names = list(dict.fromkeys([*args.tasks, *probe_tasks]))
    splits = {name: task_split(model, name, args.n_rank, args.n_eval) for name in names}
    probe = probe_rankings(model, [splits[n][0] for n in probe_tasks], cache=args.cache)
    for name in args.tasks:
        rank, held_out = splits[name]
        rankings = rank_all(model, rank, args.methods, cache=args.cache, given=probe.get(name))
        rows = judge(model, held_out, rankings, ks=args.ks, seeds=args.seeds, cache=args.cache)
        for r in rows:
            r |= {"n_rank": len(rank), "n_eval": len(held_out)}
        meta = {"model": args.model, "date": dt.date.today().isoformat(), "ks": args.ks,
                "seeds": args.seeds, "reference": REFERENCE}  # fmt: skip
        data = merge(rows, meta, Path(args.out))
        agree = data[f"logit_vs_accuracy_{name}"]
        print(json.dumps({"rows": rows, "logit_vs_accuracy": agree}, indent=1))


if __name__ == "__main__":
    main()
