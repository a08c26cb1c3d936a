"""Which forward hooks on a model treat every row of a batch and every forward pass alike.

Generation may read a batch's prompts in another shape when every hook allows it: the leading
tokens all rows share once for the whole batch (``generation.shared_start``). A hook that acts
on one row, on the last position of a pass or on a pass that continues a KV cache forbids it;
one that acts the same everywhere (a head mask at every position with one replacement per head,
the thread watcher that only times passes) is declared here, and :func:`only_alike_hooks`
checks that every hook on the model is declared.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from interp_heads.model_info import model_info, update_info


def mark_alike(model, n: int) -> None:
    """Count ``n`` more (or, negative, fewer) of the model's forward hooks as treating every
    row and every pass alike."""
    update_info(model, alike_hooks=model_info(model).alike_hooks + n)


@contextmanager
def alike_hooks(model, n: int) -> Iterator[None]:
    """Within it, ``n`` more of the model's forward hooks treat every row and pass alike."""
    mark_alike(model, n)
    try:
        yield
    finally:
        mark_alike(model, -n)


def only_alike_hooks(model) -> bool:
    """Whether every forward hook on ``model`` (its hook points and any other module) is one
    declared alike: none at all, or only such hooks."""
    total = sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())
    return total == model_info(model).alike_hooks
