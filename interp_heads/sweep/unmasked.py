"""The unmasked model's answer to every evaluated prompt, generated once and kept in the run folder.

``reference = "unmasked"`` scores each masked answer against the unmasked model's answer to the
same prompt (``interp_heads.metrics.reference``), and so do the Cognitive Mirrors metrics
(``needs_unmasked``). Those answers are generated here under the sweep's own generation settings
(greedy, ``max_new_tokens``, first-line stop unless free-form, or the ``]`` stop of the
``cognitive_mirrors`` format, the sweep's batch size), so they are the answers of the sweep's
unmasked baseline condition. Each task's
answers are stored in ``<run>/unmasked/<task>.json`` with a resume key over the model, the rendered
rows and those settings; a rerun reuses them, any change regenerates them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from interp_heads.metrics.base import first_line
from interp_heads.store import read_entry, resume, write_entry
from interp_heads.store.folder import RunFolder
from interp_heads.tasks.schema import Task

SCHEMA = {"key": str, "ids": list, "generations": list}


def reference_text(generation: str, free_form: bool) -> str:
    """What an answer is scored as: its first line, or (free-form) all of it on one line."""
    return " ".join(generation.split()) if free_form else first_line(generation)


def _as_scored(generation: str, config) -> str:
    """The unmasked answer as the metrics see it: whole and unchanged for JSON answers."""
    return generation if config.json_answers else reference_text(generation, config.free_form)


def unmasked_key(model, task: Task, prompts: list[str], config, batch_size: int) -> str:
    """Resume key of a task's unmasked answers: the model, the rows, the generation settings."""
    return resume.unit_key(
        "unmasked",
        resume.model_fingerprint(model),
        resume.rows_digest(task, prompts),
        generation=config.generation_key(batch_size),
    )


def attach_unmasked(
    model, tasks: Mapping[str, Task], config, batch_size: int, out_dir=None, shared=None
) -> dict[str, Task]:
    """Copies of ``tasks`` whose examples carry ``meta["unmasked"]`` (stored or generated now;
    ``shared``: a ``store.shared.SharedGenerations`` looked up before generating and written
    after: these answers are the generations of every sweep's unmasked condition)."""
    from interp_heads.tasks.prompts import render

    out = {}
    for name, task in tasks.items():
        prompts = render(model, [e.prompt for e in task], fmt=config.fmt or task.fmt or "auto")
        key = unmasked_key(model, task, prompts, config, batch_size)
        ids = [e.id for e in task]
        path = RunFolder(out_dir).unmasked_entry(name) if out_dir else None
        entry = read_entry(path, SCHEMA) if path and path.exists() else None
        if entry is None or entry["key"] != key or entry["ids"] != ids:
            outs = _generated(model, prompts, config, batch_size, shared)
            entry = {"key": key, "ids": ids, "generations": outs}
            if path is not None:
                RunFolder(out_dir).make_folder(path.parent)  # never through a link
                write_entry(path, entry)
        examples = [
            dataclasses.replace(e, meta={**e.meta, "unmasked": _as_scored(o, config)})
            for e, o in zip(task, entry["generations"], strict=True)
        ]
        out[name] = dataclasses.replace(task, examples=examples)
    return out


def _generated(model, prompts: list[str], config, batch_size: int, shared) -> list[str]:
    """The unmasked answers to ``prompts``: from ``shared`` when it holds them, else generated
    (and written there)."""
    from interp_heads.sweep.shared import TaskKeys

    if shared is None:
        return _answers(model, prompts, config, batch_size)
    key = TaskKeys.of(model, prompts, config, batch_size).key([])  # no head: no mask
    outs = shared.get(key, len(prompts))
    if outs is None:
        outs = _answers(model, prompts, config, batch_size)
        shared.put(key, outs, {"unmasked": True, "n_heads": 0})
    return outs


def _answers(model, prompts: list[str], config, batch_size: int) -> list[str]:
    """Generated. Where the sweep masks the generated positions only, from the whole prompts'
    shared pass (``generation.prefix.shared_prefixes``), which its masked conditions then read:
    the same computation as reading the whole prompts, one prompt pass for both."""
    from interp_heads.generation.prefix import shared_prefixes

    generation = config.generation(batch_size)
    prefixes = None
    if config.positions == "generated":
        prefixes = shared_prefixes(
            model, prompts, batch_size=generation.batch_size, whole=True,
            batch_padding=generation.batch_padding,
        )  # fmt: skip
    return generation.run(model, prompts, prefixes=prefixes)
