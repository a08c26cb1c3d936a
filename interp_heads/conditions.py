"""The sweep's resume store: one verified JSON file per finished condition (``<run>/conditions``).

A condition (task, selection, k, seed) is the sweep's unit of work: it is planned by
``interp_heads.sweep``, run in this process, in packed batches or by an executor, and stored here
once, atomically, under a resume key that digests everything its result depends on.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from interp_heads.folder import CONFIG_NAME, RunFolder
from interp_heads.heads import head_label
from interp_heads.names import safe_name
from interp_heads.runfolder import StoreWarning, read_entry, write_entry


def condition_key(task: str, selection: str, k: int, seed: int) -> str:
    """The name of a condition's entry: ``<task>__<selection>__k<k>__s<seed>`` (task: its safe name)."""
    return f"{safe_name(task)}__{selection}__k{k}__s{seed}"


@dataclass(frozen=True)
class Pending:
    """A planned condition that the store does not hold yet, with its task's prepared inputs."""

    task: str
    selection: str
    k: int
    seed: int
    heads: list
    key: str  # its entry's name (``condition_key``)
    resume_key: str
    prompts: list[str]
    ids: list[str]
    values: Any  # the task's replacement values (``head_means``), or None

    @property
    def meta(self) -> dict:
        """What the stored payload records besides the run's results."""
        return dict(
            task=self.task, selection=self.selection, k=self.k, seed=self.seed, ids=self.ids
        )


def pending_conditions(
    model, tasks, plans, ablation, store, prepare, options=None
) -> Iterator[Pending]:
    """Every planned condition not yet in ``store``, task by task, in plan order.

    ``prepare(name, task)`` gives a task's ``(prompts, ids, values, key_inputs)`` as ``run_sweep``
    computes them. The mask-effect check runs once per task that has work, on ``model``. Empty
    tasks are skipped (``run_sweep``'s own loop raises for them). ``options``: the mask's
    ``positions`` and ``factor`` (``SweepConfig.mask_options``).
    """
    from interp_heads.resume import condition_key as resume_key_of
    from interp_heads.sweep_checks import _check_mask_effect

    for name, task in tasks.items():
        if len(task) == 0:
            continue
        prompts, ids, values, key_inputs = prepare(name, task)
        checked = False
        for sel_name, k, seed, heads in plans[name]:
            key = condition_key(name, sel_name, k, seed)
            resume_key = resume_key_of(heads=heads, **key_inputs)
            if store.get(key, resume_key) is not None:
                continue
            if not checked:
                _check_mask_effect(model, name, prompts, plans[name], ablation, values, options)
                checked = True
            yield Pending(
                name, sel_name, k, seed, list(heads), key, resume_key, prompts, ids, values
            )


CONDITION_SCHEMA = {
    "resume_key": str,
    "task": str,
    "selection": str,
    "k": int,
    "seed": int,
    "ids": list,
    "heads": list,
    "generations": list,
    "scores": dict,
    "labels": dict,
}


def _condition_problem(done: dict) -> str | None:
    n = len(done["ids"])
    if len(done["generations"]) != n:
        return f"{len(done['generations'])} generations for {n} examples"
    for metric, values in done["scores"].items():
        if not isinstance(values, list) or len(values) != n:
            return f"metric {metric!r} has no list of {n} scores"
        if metric not in done["labels"]:
            return f"metric {metric!r} has no label"
    return None


class ConditionStore:
    """One verified JSON file per finished condition (``runfolder.write_entry``), keyed for resume.

    An entry is reused only when its ``resume_key`` matches (``interp_heads.resume``); a damaged
    one is reported with its file name and recomputed. ``config.json`` records the sweep config;
    a folder holding another config is refused unless ``force``, and then nothing is deleted up
    front: entries whose key differs are overwritten as their conditions run, and entries of
    conditions no longer planned are pruned once the sweep has finished (:meth:`prune`). Only
    entries the tool wrote are ever deleted: those this store put, and those the manifest lists
    (``files.conditions``); a file of anyone else in ``conditions/`` is left alone.
    """

    def __init__(self, out_dir: str | os.PathLike | None, config, force: bool = False):
        folder = RunFolder(out_dir) if out_dir else None
        self.folder = folder
        self.dir = folder.conditions if folder else None
        self.written: set[str] = set()
        if folder is None:
            return
        folder.check_links()
        stamp = folder.conditions_config
        mine = {"digest": config.digest(), "config": config.to_dict()}
        theirs = read_entry(stamp, {"digest": str}) if stamp.exists() else None
        if theirs is not None and theirs["digest"] != mine["digest"] and not force:
            raise FileExistsError(
                f"{self.dir} holds a sweep with a different config; use another folder or force"
            )
        self.dir.mkdir(parents=True, exist_ok=True)
        if theirs != mine:
            write_entry(stamp, mine)

    def get(self, key: str, resume_key: str | None = None) -> dict | None:
        """The finished condition ``key`` if it is intact and (when given) has this ``resume_key``."""
        if self.dir is None:
            return None
        path = RunFolder.condition_entry_in(self.dir, key)
        done = read_entry(path, CONDITION_SCHEMA)
        problem = _condition_problem(done) if done is not None else None
        if problem:
            warnings.warn(
                f"{path}: {problem}; ignored, it will be recomputed", StoreWarning, stacklevel=2
            )
            return None
        if done is None or (resume_key is not None and done["resume_key"] != resume_key):
            return None
        return done

    def put(self, key: str, payload: dict) -> None:
        if self.dir is not None:
            write_entry(RunFolder.condition_entry_in(self.dir, key), payload)
            self.written.add(key)

    def prune(self, keep: set[str]) -> None:
        """Delete the tool's condition files other than ``keep`` (call only after a finished sweep)."""
        if self.folder is None:
            return
        self.folder.check_links()
        for key in (set(self.folder.listed("conditions")) | self.written) - set(keep):
            if (
                key != CONFIG_NAME.removesuffix(".json")
                and "/" not in key
                and key not in ("", "..")
            ):
                self.folder.delete(RunFolder.condition_entry_in(self.dir, key))


# --------------------------------------------------------------------------- payloads and records
def metric_items(task, outs, free_form: bool = False) -> list:
    """One item per answer; ``unmasked`` is the example's ``meta["unmasked"]`` (the unmasked
    model's answer, ``interp_heads.unmasked``). Free-form answers are scored whole: their lines
    joined by spaces (metrics score an answer's first line)."""
    from interp_heads.metrics import MetricItem

    return [
        MetricItem(
            src=e.question or e.prompt,
            mt=" ".join(o.split()) if free_form else o,
            ref=e.answer,
            aliases=tuple(e.aliases),
            distractors=tuple(e.distractors),
            unmasked=e.meta.get("unmasked"),
        )
        for e, o in zip(task, outs, strict=True)
    ]


def condition_payload(task, heads, outs, metrics, cache, t_gen, t0, free_form=False) -> dict:
    """A finished condition as the resume store holds it (``t0``: its start, for the total time)."""
    items = metric_items(task, outs, free_form)
    scores = {m.name: cache.score(m, items) for m in metrics}
    labels = {m.name: m.label for m in metrics}
    return {
        "heads": [head_label(layer, h) for layer, h in heads],
        "generations": outs,
        "scores": scores,
        "labels": labels,
        "seconds": {"generate": t_gen, "total": time.perf_counter() - t0},
    }


def collect_records(done: dict, rows: list, gens: list) -> None:
    base = {key: done[key] for key in ("task", "selection", "seed", "k")}
    for i, ex_id in enumerate(done["ids"]):
        gens.append(
            {
                **base,
                "example_id": ex_id,
                "heads": ",".join(done["heads"]),
                "generation": done["generations"][i],
            }
        )
        for metric, values in done["scores"].items():
            rows.append(
                {
                    **base,
                    "metric": metric,
                    "label": done["labels"][metric],
                    "example_id": ex_id,
                    "value": values[i],
                }
            )
