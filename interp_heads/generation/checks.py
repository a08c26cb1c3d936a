"""The arguments of ``generate`` checked before any token is generated (one ``InputError`` each).

The command line checks a task's prompts against the model's context before a run starts
(``config.validation.check_prompt_lengths``); these are the same checks for the Python API,
where the prompts and ``max_new_tokens`` arrive directly: a prompt that does not fit with its
answer, an empty prompt, a batch size of 0 are refused with a line naming the argument.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from interp_heads.errors import InputError


def positive_int(value, name: str, least: int = 1) -> int:
    """``value`` if it is an integer >= ``least`` (not a bool), else InputError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise InputError(f"{name} must be an integer >= {least}, got {value!r}")
    return value


def hook_list(fwd_hooks) -> list:
    """``fwd_hooks`` as a list of ``(hook name, function)`` pairs, else InputError naming the
    first bad one (TransformerLens would fail later with a bare TypeError)."""
    if isinstance(fwd_hooks, str | bytes) or not isinstance(fwd_hooks, Iterable):
        raise InputError(f"fwd_hooks must be a list of (name, fn) pairs, got {fwd_hooks!r}")
    hooks = list(fwd_hooks)
    for i, pair in enumerate(hooks):
        ok = isinstance(pair, tuple | list) and len(pair) == 2
        if not ok or not (isinstance(pair[0], str) or callable(pair[0])) or not callable(pair[1]):
            raise InputError(
                f"fwd_hooks[{i}] must be a (hook name, function) pair, got {str(pair)[:80]}"
            )
    return hooks


def prompt_list(prompts) -> list[str]:
    """``prompts`` (a list, tuple, pandas column ... of strings) as a list; the caller unwraps a
    lone string first."""
    if isinstance(prompts, str | bytes) or not isinstance(prompts, Iterable):
        raise InputError(
            f"prompts must be a string or a list of strings, got {type(prompts).__name__}"
        )
    prompts = list(prompts)
    for i, p in enumerate(prompts):
        if not isinstance(p, str):
            raise InputError(f"prompts[{i}] must be a string, got {type(p).__name__}")
    return prompts


def check_fits(
    model, prompts: Sequence[str], max_new_tokens: int, prepend_bos: bool | None
) -> None:
    """Every prompt has a token and fits the model's context with ``max_new_tokens`` more."""
    n_ctx = int(model.cfg.n_ctx)
    if max_new_tokens >= n_ctx:
        raise InputError(
            f"max_new_tokens={max_new_tokens} leaves no room for a prompt in the model context "
            f"of {n_ctx} tokens"
        )
    limit = n_ctx - max_new_tokens
    for i, text in enumerate(prompts):
        size = len(text.encode())
        if 0 < size and size + 2 <= limit:  # a token covers at least one byte: no need to count
            continue
        n = len(
            model.to_tokens(text, prepend_bos=prepend_bos, move_to_device=False, truncate=False)[0]
        )
        if n == 0:
            raise InputError(
                f"prompts[{i}] is empty: the model needs at least one token to continue"
            )
        if n > limit:
            raise InputError(
                f"prompts[{i}] is {n} tokens; with max_new_tokens={max_new_tokens} it exceeds the "
                f"model context of {n_ctx} tokens"
            )
