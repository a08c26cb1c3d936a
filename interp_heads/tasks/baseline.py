"""Baseline accuracy of the unablated model, and the subset of a task it gets right."""

from __future__ import annotations

import logging
import warnings

from interp_heads.tasks.evaluate import DEFAULT_MAX_NEW_TOKENS, BaselineResult, evaluate_in_format
from interp_heads.tasks.prompt_format import task_format
from interp_heads.tasks.prompts import PromptFormat
from interp_heads.tasks.schema import Task, filter_note

__all__ = ["BaselineResult", "evaluate_baseline", "filter_correct", "take_correct"]
log = logging.getLogger(__name__)


def evaluate_baseline(
    model,
    task: Task,
    *,
    fmt: PromptFormat | str | None = None,
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
    batch_size: int = 32,
    batch_padding: int | None = None,
    corrupted: bool = False,
    progress: bool = False,
) -> BaselineResult:
    """Greedy generations and correctness (``is_correct``) on every example of ``task``.

    ``fmt=None`` uses the task's own format (``task.fmt``: ``"plain"`` for the built-in tasks;
    a task file that declares none has it measured once, as the command line does:
    ``tasks.prompt_format.task_format``). With ``corrupted=True`` the corrupted prompts (when the
    task has them) are scored too, against ``corrupted_answer``. In the ``cognitive_mirrors`` format
    generation stops after ``]`` and the answer checked is the one extracted from the JSON block.
    ``progress`` shows a bar over the prompts.
    """
    return evaluate_in_format(
        model, task, task_format(model, task, fmt), max_new_tokens=max_new_tokens,
        batch_size=batch_size, batch_padding=batch_padding, corrupted=corrupted, progress=progress,
    )  # fmt: skip


def filter_correct(
    model,
    task: Task,
    *,
    fmt: PromptFormat | str | None = None,
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
    batch_size: int = 32,
    batch_padding: int | None = None,
    require_corrupted: bool = False,
    result: BaselineResult | None = None,
    progress: bool = False,
) -> Task:
    """The examples the unablated model answers correctly (a new ``Task``).

    Args:
        fmt: prompt format; ``None`` uses the task's (measured when the file declares none).
        require_corrupted: also require the corrupted prompt to be answered correctly.
        result: a baseline already computed for ``task`` (with the same options), to reuse.
        progress: show a progress bar over the generated answers.

    Every example is generated once: filter a subset (``task.subset(n=40)``) when a few dozen
    correct examples are enough, or use :func:`take_correct`, which stops once it has ``n``.

    The counts go to ``meta["filter"]`` of the returned task and to the log.
    """
    need_corrupted = require_corrupted and task.has_corrupted
    fmt = task_format(model, task, fmt) if result is None else result.fmt
    if result is None or (need_corrupted and result.corrupted_correct is None):
        result = evaluate_baseline(
            model,
            task,
            fmt=fmt,
            max_new_tokens=max_new_tokens,
            batch_size=batch_size,
            batch_padding=batch_padding,
            corrupted=need_corrupted,
            progress=progress,
        )
    keep = list(result.correct)
    if need_corrupted:
        keep = [a and b for a, b in zip(keep, result.corrupted_correct, strict=True)]
    kept = [e for e, k in zip(task.examples, keep, strict=True) if k]
    meta = dict(task.meta)
    meta["filter"] = {
        "n_before": len(task),
        "n_after": len(kept),
        "accuracy": result.accuracy,
        "require_corrupted": need_corrupted,
        "fmt": result.fmt,
        "max_new_tokens": max_new_tokens,
    }
    log.info(
        "filter_correct %s: kept %d of %d examples%s",
        task.name,
        len(kept),
        len(task),
        " (clean and corrupted correct)" if need_corrupted else "",
    )
    return _none_kept_warned(Task(task.name, kept, task.source, task.sha256, meta))


def _none_kept_warned(kept: Task) -> Task:
    """``kept``, with a warning when the unmasked model answered none of its task correctly:
    nothing is left to rank or evaluate (a wrong prompt format is the usual cause)."""
    if not len(kept):
        warnings.warn(
            f"task {kept.name!r}: no example answered correctly{filter_note(kept)}; nothing is "
            "left to rank or evaluate (try another fmt=, or more max_new_tokens)",
            UserWarning,
            stacklevel=3,
        )
    return kept


def take_correct(
    model,
    task: Task,
    n: int | None,
    *,
    fmt: PromptFormat | str | None = None,
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
    batch_size: int = 32,
    batch_padding: int | None = None,
    progress: bool = False,
) -> Task:
    """The first ``n`` examples (in task order) that the unmasked model answers correctly.

    Evaluates the task in growing chunks and stops as soon as ``n`` are found (all examples when
    ``n`` is None), so ranking 24 examples of a 10,000-row file does not generate 10,000 answers.
    ``meta["filter"]`` of the result says how many were evaluated and kept.
    """
    fmt = task_format(model, task, fmt)  # once, before the task is cut into chunks
    kept, done, chunk = [], 0, max(2 * (n or 0), 32)
    while done < len(task) and (n is None or len(kept) < n):
        part = Task(
            task.name, task.examples[done : done + chunk], task.source, task.sha256, dict(task.meta)
        )
        res = evaluate_baseline(
            model,
            part,
            fmt=fmt,
            max_new_tokens=max_new_tokens,
            batch_size=batch_size,
            batch_padding=batch_padding,
            progress=progress,
        )
        kept += [e for e, ok in zip(part.examples, res.correct, strict=True) if ok]
        done += len(part)
        chunk *= 2
    kept = kept[:n] if n is not None else kept
    meta = dict(task.meta)
    meta["filter"] = {
        "n_evaluated": done,
        "n_kept": len(kept),
        "fmt": fmt,
        "max_new_tokens": max_new_tokens,
    }
    return _none_kept_warned(Task(task.name, kept, task.source, task.sha256, meta))


def main(argv: list[str] | None = None) -> int:
    """Print the baseline table of the built-in tasks (``python -m interp_heads.tasks.baseline``)."""
    import argparse

    from interp_heads.models.load import load_model
    from interp_heads.tasks.io import load_task
    from interp_heads.tasks.schema import BUILTIN_TASKS

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("tasks", nargs="*", default=list(BUILTIN_TASKS))
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--fmt", default=None)
    parser.add_argument("--max-new-tokens", type=int, default=DEFAULT_MAX_NEW_TOKENS)
    parser.add_argument("-n", type=int, default=None, help="first n examples only")
    parser.add_argument("--dump", default=None, help="write per-example results (CSV) here")
    args = parser.parse_args(argv)
    model = load_model(args.model)
    print("| task | n | accuracy | n after filter | format | max_new_tokens |")
    print("|---|---|---|---|---|---|")
    frames = []
    for name in args.tasks:
        task = load_task(name).subset(n=args.n)
        res = evaluate_baseline(model, task, fmt=args.fmt, max_new_tokens=args.max_new_tokens)
        kept = filter_correct(model, task, result=res)
        print(
            f"| {name} | {res.n} | {res.accuracy:.3f} | {len(kept)} | {res.fmt} | {res.max_new_tokens} |",
            flush=True,
        )
        frames.append(res.to_frame())
    if args.dump:
        import pandas as pd

        from interp_heads.store.atomic import atomic
        from interp_heads.store.csv_cells import write_csv

        with atomic(args.dump) as tmp:  # never through a link at the dump's path
            write_csv(pd.concat(frames), tmp)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
