"""The ``attribute`` command's progress bar: its steps (a known total) and the forward passes."""

from __future__ import annotations

import contextlib

STEP_NAMES = {"baseline": "examples", "attribute": "attribution", "known": "known heads",
              "attention": "attention patterns", "report": "report"}  # fmt: skip


@contextlib.contextmanager
def step_progress(exp, steps: list[str], quiet: bool):
    """A bar over the run's ``steps``, counting the model's forward passes; yields ``on_step`` for
    ``run_steps`` (it moves the bar to the step starting and names it). The steps' own bars stay
    hidden but the known heads' (layers done): the command's ``Invocation.bars``."""
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

    handle = exp.model.embed.register_forward_hook(count)
    try:
        yield on_step
        bar.n = len(steps)
        bar.refresh()
    finally:
        handle.remove()
        bar.close()
