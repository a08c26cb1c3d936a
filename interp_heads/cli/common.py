"""Pieces the commands share: loading the model, picking examples, progress, digests."""

from __future__ import annotations

import contextlib
import io
import sys

from interp_heads.config import validation
from interp_heads.errors import PipelineError
from interp_heads.models.specs import load_any_model
from interp_heads.store import config_digest


def _load_model(args):
    """The model of ``--model`` on ``--device`` (library chatter such as "Moving model to device"
    on stdout is swallowed: stdout carries the command's results)."""
    validation.check_device(args.device)
    if not str(args.model).strip():
        raise PipelineError("--model is empty; name a model (e.g. smollm2-135m) or a folder")
    with contextlib.redirect_stdout(io.StringIO()):
        model = load_any_model(
            args.model,
            args.device,
            n_devices=getattr(args, "n_devices", 1),
            backend=getattr(args, "backend", "hooked"),
        )
    from interp_heads.execution import threads

    threads.watch(model)  # share the cores with interp-heads processes that start later
    return model


def _first_examples(args, model, task, n, fmt, doing: str):
    """The first ``n`` examples, or (unless ``--no-filter``) the first ``n`` answered correctly."""
    from interp_heads.tasks import take_correct

    if args.no_filter:
        return task.subset(n=n)
    kept = take_correct(
        model, task, n, fmt=fmt, max_new_tokens=args.max_new_tokens, batch_size=args.batch_size
    )
    _say(
        args,
        f"{doing} {len(kept)} correctly answered example(s) "
        f"({kept.meta['filter']['n_evaluated']} of {len(task)} evaluated)",
    )
    return kept


def _say(args, line: str) -> None:
    if not getattr(args, "quiet", False):
        print(line, file=sys.stderr)


STEP_NAMES = {"attribute": "attribution", "known": "known heads", "attention": "attention patterns",
              "report": "report"}  # fmt: skip


@contextlib.contextmanager
def _step_progress(model, steps: list[str], quiet: bool):
    """A progress bar over a command's steps (its total), counting the model's forward passes.

    Yields ``on_step`` for ``run_steps``: it moves the bar to the step starting and names it.
    """
    from tqdm.auto import tqdm

    bar = tqdm(total=len(steps), unit=" step", disable=quiet, leave=False)
    forwards = [0]

    def count(*_) -> None:  # a forward hook returning a value would replace the output
        forwards[0] += 1
        bar.set_postfix_str(f"{forwards[0]} forward passes", refresh=False)
        bar.refresh()

    def on_step(name: str) -> None:
        bar.n = steps.index(name) if name in steps else bar.n
        bar.set_description(STEP_NAMES.get(name, name), refresh=True)

    handle = model.embed.register_forward_hook(count)
    try:
        yield on_step
        bar.n = len(steps)
        bar.refresh()
    finally:
        handle.remove()
        bar.close()


def _parse(enum, value: str):
    try:
        return enum.parse(value)
    except ValueError as exc:
        raise PipelineError(str(exc)) from None


def _digest(params: dict) -> str:
    return config_digest(params)
