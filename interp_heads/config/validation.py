"""Input checks that run before anything is written: counts, k lists, heads, devices, prompt lengths.

Each check raises ``PipelineError`` (a ``ValueError``) with one line naming the offending value, so
the CLI ends with ``interp-heads: error: ...`` and exit status 2 and an earlier run folder is left
as it was. The ``*_arg`` functions are ``argparse`` types.
"""

from __future__ import annotations

import argparse
import os
import stat
from collections import Counter
from pathlib import Path

from interp_heads.arguments import finite_number
from interp_heads.errors import InputError, PipelineError
from interp_heads.models.devices import DEVICE, check_device  # noqa: F401 (re-exported)


# --------------------------------------------------------------------------- argparse types
def positive_int_arg(text: str) -> int:
    """An integer > 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer > 0, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {value}")
    return value


def bounded_int(hi: int):
    """An argparse type: an integer in ``1..hi``."""

    def parse(text: str) -> int:
        value = positive_int_arg(text)
        if value > hi:
            raise argparse.ArgumentTypeError(f"must be at most {hi}, got {value}")
        return value

    return parse


def non_negative_int(text: str) -> int:
    """An integer >= 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def ks_arg(text: str) -> list[int]:
    """A non-empty, duplicate-free, comma-separated list of integers > 0 (``16,32,64``)."""
    parts = [x.strip() for x in text.split(",") if x.strip()]
    if not parts:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers > 0, got {text!r}")
    try:
        ks = [int(x) for x in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers > 0, got {text!r}"
        ) from None
    bad = [k for k in ks if k <= 0]
    if bad:
        raise argparse.ArgumentTypeError(f"k={bad[0]} must be > 0")
    dup = [k for k, n in Counter(ks).items() if n > 1]
    if dup:
        raise argparse.ArgumentTypeError(f"k={dup[0]} is given twice")
    return ks


def names_arg(text: str) -> list[str]:
    """A non-empty comma-separated list of names."""
    names = [x.strip() for x in text.split(",") if x.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected comma-separated names, got {text!r}")
    return names


def finite_float(text: str) -> float:
    """A finite number (``nan`` and ``inf`` are refused: a mask scaled by them is no result)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    try:
        return finite_number(value)  # the check the Python API makes (interp_heads.arguments)
    except InputError:
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}") from None


# --------------------------------------------------------------------------- values
def check_regular_file(path: str | os.PathLike, what: str, max_bytes: int | None = None) -> None:
    """``path`` must be a regular file of at most ``max_bytes``: a folder, a FIFO (which would
    block the read) or a device such as ``/dev/zero`` (which never ends) is refused unread."""
    try:
        st = Path(path).stat()
    except FileNotFoundError:
        raise PipelineError(f"{what} not found") from None
    except OSError as exc:
        raise PipelineError(f"{what}: cannot read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(st.st_mode):
        raise PipelineError(f"{what} is a folder, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise PipelineError(f"{what} is not a regular file (a device, FIFO or socket)")
    if max_bytes is not None and st.st_size > max_bytes:
        raise PipelineError(
            f"{what} is {st.st_size:,} bytes; at most {max_bytes:,} are read (is it the right file?)"
        )


def check_unique_heads(heads, source: str) -> None:
    """No head twice (it would be masked once but counted twice in k)."""
    from interp_heads.heads import head_label

    seen = Counter(tuple(h) for h in heads)
    dup = [h for h, n in seen.items() if n > 1]
    if dup:
        raise PipelineError(f"{source} lists head {head_label(*dup[0])} {seen[dup[0]]} times")


def check_ks_fit(ks, n_available: int, source: str) -> None:
    """Every k must be at most the number of heads ``source`` ranks."""
    too_big = [k for k in ks if k > n_available]
    if too_big:
        raise PipelineError(f"k={max(too_big)} exceeds the {n_available} heads in {source}")


def out_arg(text: str) -> str:
    """An output folder: a non-empty path (``--out ''`` would write into the current folder)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a folder name, got an empty string")
    return text


def check_special_tokens(model, task) -> None:
    """No prompt may spell a special token of the tokenizer (``<|im_end|>``): it would be read as
    the token itself, not as text."""
    tok = getattr(model, "tokenizer", None)
    specials = [t for t in (getattr(tok, "all_special_tokens", None) or []) if len(t) > 1]
    for ex in task:
        for fieldname in ("prompt", "corrupted_prompt"):
            text = getattr(ex, fieldname, None) or ""
            hit = next((t for t in specials if t in text), None)
            if hit:
                raise PipelineError(
                    f"task {task.name!r} row {ex.id!r}: {fieldname.replace('_', ' ')} contains the "
                    f"tokenizer's special token {hit!r}; it would be read as that token, not text"
                )


def check_prompt_lengths(
    model, task, fmt: str, max_new_tokens: int = 1, corrupted: bool = False
) -> None:
    """Every rendered prompt plus ``max_new_tokens`` must fit the model's context (names the row);
    no prompt may spell a special token (:func:`check_special_tokens`)."""
    from interp_heads.tasks.prompts import render

    check_special_tokens(model, task)
    n_ctx = int(model.cfg.n_ctx)
    limit = n_ctx - max_new_tokens
    if limit <= 0:
        raise PipelineError(
            f"max-new-tokens={max_new_tokens} leaves no room in the model context of {n_ctx}"
        )
    fields = ["prompt", "corrupted_prompt"] if corrupted else ["prompt"]
    for fieldname in fields:
        texts = [getattr(e, fieldname) or "" for e in task]
        rendered = render(model, texts, fmt=fmt) if texts else []
        for ex, text in zip(task, rendered, strict=True):
            if (
                len(text.encode()) + 2 <= limit
            ):  # a token covers at least one byte: no need to tokenize
                continue
            bound = len(text) // _longest_token(model.tokenizer) + 1  # no token covers more
            counted = bound <= limit  # else too long for certain: not tokenised
            n = len(model.tokenizer(text)["input_ids"]) + 1 if counted else bound
            if n > limit:
                raise PipelineError(
                    f"task {task.name!r} row {ex.id!r}: {fieldname.replace('_', ' ')} is "
                    f"{'' if counted else 'at least '}{n} tokens; with "
                    f"max-new-tokens={max_new_tokens} it exceeds the model context of {n_ctx}"
                )


def _longest_token(tokenizer) -> int:
    """Characters of the vocabulary's longest token (cached on the tokenizer): a text of ``c``
    characters is at least ``c // _longest_token`` tokens, so a prompt far too long for the
    context is refused without tokenising it (a 20 MB prompt would take minutes and gigabytes)."""
    cached = getattr(tokenizer, "_interp_heads_longest_token", None)
    if cached is None:
        vocab = tokenizer.get_vocab() if hasattr(tokenizer, "get_vocab") else {}
        cached = max((len(t) for t in vocab), default=0) or 10**9
        try:
            tokenizer._interp_heads_longest_token = cached
        except AttributeError:
            pass
    return cached
