"""Which prompt format a task is run in: declared by its file, else chosen by measurement.

Attribution (ranking) and masking must see the same prompts, so every command resolves the format
once through :func:`resolve_format` and records how it was chosen. Built-in tasks are plain
completion prompts; a user's file may declare ``chat`` or ``plain`` (a ``fmt`` field or a header
line, see ``tasks.io``); otherwise the unmasked model's accuracy is measured on the first ``n``
examples in both formats and the better one is taken (plain on a tie, or when the model has no chat
template), and the measured accuracies are returned for the manifest.
"""

from __future__ import annotations

import sys
import warnings
import weakref

from interp_heads.tasks.schema import Task

FORMATS = ("plain", "chat")
# The command line's measurement settings (``RunConfig``'s max_new_tokens and batch_size
# defaults), so that the Python API measures a task as ``interp-heads attribute`` does.
MEASURE_MAX_NEW_TOKENS = 16
MEASURE_BATCH_SIZE = 16
# model -> {task key: (fmt, info)}: every measurement, so each (model, task) is measured once
_MEASURED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class FormatWarning(UserWarning):
    """A task's examples were filtered, ranked or evaluated in different prompt formats."""


def resolve_format(
    model,
    task: Task,
    requested: str | None = None,
    *,
    n: int = 32,
    max_new_tokens: int = 8,
    batch_size: int = 16,
) -> tuple[str, dict]:
    """The prompt format for ``task`` and how it was chosen.

    Args:
        model: the model (used only when the format must be measured).
        task: the task; ``task.meta["fmt_source"]`` says whether the format is declared.
        requested: an explicit ``"chat"``/``"plain"``/``"auto"`` (a flag or config value); None
            or ``"measure"``: the task's declared format, else measured.
        n, max_new_tokens, batch_size: the measurement's size.

    Returns:
        ``(fmt, info)``; ``info["source"]`` is ``requested``, ``file``, ``built-in`` or
        ``measured`` (then ``info["accuracy"] = {"plain": ..., "chat": ...}`` on ``info["n"]``
        examples). The task's ``meta`` is updated with the choice.
    """
    from interp_heads.tasks.evaluate import evaluate_in_format
    from interp_heads.tasks.prompts import has_chat_template

    if requested not in (None, "measure"):
        info = {"source": "requested"}
    elif task.meta.get("fmt_source") in ("file", "built-in"):
        return task.fmt, {"source": task.meta["fmt_source"]}
    elif task.meta.get("fmt_source") == "measured":
        return task.fmt, dict(task.meta.get("fmt_info", {}))
    elif not has_chat_template(model):
        requested, info = "plain", {"source": "measured", "note": "the model has no chat template"}
    else:
        sample = task.subset(n=n)
        acc = {
            f: evaluate_in_format(
                model, sample, f, max_new_tokens=max_new_tokens, batch_size=batch_size
            ).accuracy
            for f in FORMATS
        }
        requested = "chat" if acc["chat"] > acc["plain"] else "plain"
        info = {"source": "measured", "accuracy": acc, "n": len(sample)}
    if info["source"] == "measured":
        _MEASURED.setdefault(model, {})[_task_key(task)] = (requested, dict(info))
    task.meta.update(fmt=requested, fmt_source=info["source"], fmt_info=info)
    return requested, info


def describe(fmt: str, info: dict) -> str:
    """One line for the console: ``prompt format: plain (measured: plain 0.81, chat 0.52 on 32)``."""
    if info.get("source") == "measured" and "accuracy" in info:
        acc = ", ".join(f"{k} {v:.2f}" for k, v in info["accuracy"].items())
        return f"prompt format: {fmt} (measured: {acc} on {info['n']} examples)"
    return f"prompt format: {fmt} ({info.get('source', '?')}{'; ' + info['note'] if 'note' in info else ''})"


def _task_key(task: Task) -> tuple:
    """Which task a measurement belongs to: its file (name, source, hash), so that subsets and
    splits of one loaded file share it; an in-memory task: its name and example ids."""
    if task.sha256:
        return (task.name, task.source, task.sha256)
    return (task.name, tuple(e.id for e in task.examples))


def task_format(model, task: Task, fmt: str | None = None) -> str:
    """The prompt format a Python call on ``task`` uses, resolved as the command line resolves it.

    ``fmt`` when given; else the task's declared format (its file's, or a built-in's ``plain``);
    else measured by :func:`resolve_format` with the command line's settings, once per model and
    task file, printed once on stderr (:func:`describe`) and recorded in ``task.meta`` (``fmt``,
    ``fmt_source``, ``fmt_info``), so that later calls, subsets and splits use the same format.
    """
    if fmt is not None:
        return str(fmt)
    source = task.meta.get("fmt_source")
    if source != "measured" and task.fmt != "auto":
        return task.fmt  # declared (file, built-in) or chosen explicitly
    seen = _MEASURED.get(model, {}).get(_task_key(task))
    if seen is None and source == "measured" and not _measured_by_another(model, task):
        return task.fmt  # measured where no record is kept (a run's tasks)
    if seen is None:
        fresh = Task(task.name, task.examples, task.source, task.sha256)
        chosen, info = resolve_format(
            model, fresh, max_new_tokens=MEASURE_MAX_NEW_TOKENS, batch_size=MEASURE_BATCH_SIZE
        )
        print(describe(chosen, info), file=sys.stderr)
        seen = (chosen, info)
    task.meta.update(fmt=seen[0], fmt_source=seen[1]["source"], fmt_info=dict(seen[1]))
    return seen[0]


def _measured_by_another(model, task: Task) -> bool:
    key = _task_key(task)
    return any(key in found for other, found in _MEASURED.items() if other is not model)


def effective_format(model, fmt: str) -> str:
    """``fmt`` as ``render`` applies it: ``auto`` is ``chat`` with a chat template, else ``plain``."""
    from interp_heads.tasks.prompts import has_chat_template

    if fmt == "auto":
        return "chat" if has_chat_template(model) else "plain"
    return str(fmt)


def check_same_format(model, task: Task, fmt: str, ranking=None, where: str = "") -> None:
    """Warn (:class:`FormatWarning`) when ``task`` was filtered (``filter_correct``), or
    ``ranking`` (a ``HeadScores``) was made, in another prompt format than ``fmt``, the one
    ``where`` uses: heads ranked on one rendering and masked on another are not the same test."""
    used = effective_format(model, fmt)
    earlier = {
        "filtered (filter_correct)": (task.meta.get("filter") or {}).get("fmt"),
        "ranked": (getattr(ranking, "provenance", None) or {}).get("fmt"),
    }
    for what, other in earlier.items():
        if other and effective_format(model, other) != used:
            warnings.warn(
                f"{where}: task {task.name!r} was {what} in prompt format "
                f"{effective_format(model, other)!r} but {where} uses {used!r}; pass the same "
                "fmt= to every call (task.fmt after the first)",
                FormatWarning,
                stacklevel=3,
            )
