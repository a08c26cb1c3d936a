"""Which prompt format a task is run in: declared by its file, else chosen by measurement.

Attribution (ranking) and masking must see the same prompts, so every command resolves the format
once through :func:`resolve_format` and records how it was chosen. Built-in tasks are plain
completion prompts; a user's file may declare ``chat`` or ``plain`` (a ``fmt`` field or a header
line, see ``tasks.io``); otherwise the unmasked model's accuracy is measured on the first ``n``
examples in both formats and the better one is taken (plain on a tie, or when the model has no chat
template), and the measured accuracies are returned for the manifest.
"""

from __future__ import annotations

from interp_heads.tasks.schema import Task

FORMATS = ("plain", "chat")


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
    from interp_heads.tasks.baseline import evaluate_baseline
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
            f: evaluate_baseline(
                model, sample, fmt=f, max_new_tokens=max_new_tokens, batch_size=batch_size
            ).accuracy
            for f in FORMATS
        }
        requested = "chat" if acc["chat"] > acc["plain"] else "plain"
        info = {"source": "measured", "accuracy": acc, "n": len(sample)}
    task.meta.update(fmt=requested, fmt_source=info["source"], fmt_info=info)
    return requested, info


def describe(fmt: str, info: dict) -> str:
    """One line for the console: ``prompt format: plain (measured: plain 0.81, chat 0.52 on 32)``."""
    if info.get("source") == "measured" and "accuracy" in info:
        acc = ", ".join(f"{k} {v:.2f}" for k, v in info["accuracy"].items())
        return f"prompt format: {fmt} (measured: {acc} on {info['n']} examples)"
    return f"prompt format: {fmt} ({info.get('source', '?')}{'; ' + info['note'] if 'note' in info else ''})"
