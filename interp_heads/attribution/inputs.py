"""Task -> token batches, the answer-token helper, metrics and parameter freezing.

Every attribution method sees the same batches: the task's prompts rendered for the model
(:func:`interp_heads.tasks.prompts.render`), sorted by token length, left-padded, with the attention mask
TransformerLens itself would compute (leading pads masked out).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from jaxtyping import Float, Int

from interp_heads.errors import InputError
from interp_heads.generation.decode import final_logits, last_logits, tokenize_left_padded  # noqa: F401 (re-exported)
from interp_heads.models.backends import backend_of
from interp_heads.models.tl_compat import HookedTransformer
from interp_heads.tasks.prompts import PromptFormat, has_chat_template, render
from interp_heads.tasks.schema import Task


def uses_chat(model: HookedTransformer, fmt: PromptFormat | str = "auto") -> bool:
    """Whether ``render(model, ..., fmt)`` wraps prompts in the chat template."""
    return fmt == "chat" or (fmt == "auto" and has_chat_template(model))


def answer_token(model: HookedTransformer, answer: str, *, chat: bool, prompt: str = "") -> int:
    """Id of the first token of ``answer`` as the model would produce it after the prompt.

    In chat format the answer starts right after ``"assistant\\n"``: its first token is that of
    ``answer`` itself. In plain format the answer usually follows a space, so the tokenization of
    ``" " + answer`` is used, unless the prompt already ends with whitespace.
    """
    text = answer.strip()
    if not chat and not (prompt and prompt[-1].isspace()):
        text = " " + text
    toks = backend_of(model).text_tokens(model, text)  # some tokenizers put BOS before any text
    if len(toks) == 0:
        raise InputError(f"answer {answer!r} has no tokens")
    return int(toks[0])


@dataclass
class Batch:
    """Left-padded token batch of a task; ``corrupted*`` are ``None`` when not needed."""

    ids: list[str]
    clean: Int[torch.Tensor, "batch pos"]
    mask: Int[torch.Tensor, "batch pos"]
    answer: Int[torch.Tensor, " batch"]
    corrupted: Int[torch.Tensor, "batch pos"] | None = None
    corrupted_answer: Int[torch.Tensor, " batch"] | None = None
    memory_capped: bool = False  # the free memory cut the task's batches (``make_batches``)
    # how many times each row counts ([batch] whole numbers; None: once each): a bootstrap
    # resample's repeated examples run once (``analysis.search_resamples``)
    weight: torch.Tensor | None = None

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def counts(self) -> list[int]:
        """How many times each row counts (once each when ``weight`` is None)."""
        return [1] * len(self) if self.weight is None else [int(c) for c in self.weight.tolist()]

    @property
    def first_diff(self) -> int:
        """First position where any clean and corrupted row differ (patches before it are no-ops)."""
        if self.corrupted is None:
            return 0
        diff = (self.clean != self.corrupted).any(dim=0).nonzero()
        return int(diff[0]) if len(diff) else self.clean.shape[1]


def make_batches(
    model: HookedTransformer,
    task: Task,
    *,
    n_examples: int | None = None,
    batch_size: int = 8,
    fmt: PromptFormat | str = "auto",
    corrupted: bool = True,
    rows_for_width: Callable[[int], int] | None = None,
    batch_padding: int | None = None,
) -> list[Batch]:
    """Render, tokenize and batch a task's first ``n_examples`` examples (sorted by length).

    Besides ``batch_size``: ``rows_for_width(width)``, at most that many examples in a batch
    whose longest prompt has ``width`` tokens (a gradient pass's memory:
    ``attribution.memory.gradient_rows``); ``batch_padding``, at most that many padding
    positions in a batch (a sweep's ``batch_padding``: prompts of very different lengths are
    not all padded to the longest). Both cut by ``generation.decode.padding_budget_groups``.

    Raises:
        ValueError: when ``corrupted`` is asked for and an example lacks a corrupted prompt or its
            clean and corrupted prompts tokenize to different lengths.
    """
    examples = list(task.examples[:n_examples] if n_examples is not None else task.examples)
    if not examples:
        raise InputError(f"task {task.name!r} has no examples")
    chat = uses_chat(model, fmt)
    clean_text = render(model, [e.prompt for e in examples], fmt=fmt)
    corr_text: list[str] = []
    if corrupted:
        missing = [e.id for e in examples if not (e.corrupted_prompt and e.corrupted_answer)]
        if missing:
            raise InputError(
                f"task {task.name!r}: examples without a corrupted prompt: {missing[:3]}"
            )
        corr_text = render(model, [e.corrupted_prompt for e in examples], fmt=fmt)
    lengths = [
        model.to_tokens(t, prepend_bos=model.cfg.default_prepend_bos, move_to_device=False).shape[1]
        for t in clean_text
    ]
    order = sorted(range(len(examples)), key=lambda i: lengths[i])
    device = model.cfg.device
    batches = []
    groups, capped = _groups(order, lengths, batch_size, rows_for_width, batch_padding, task.name)
    for idx in groups:
        clean, mask = tokenize_left_padded(model, [clean_text[i] for i in idx])
        ans = [
            answer_token(model, examples[i].answer, chat=chat, prompt=examples[i].prompt)
            for i in idx
        ]
        batch = Batch(
            [examples[i].id for i in idx],
            clean.to(device),
            mask.to(device),
            torch.tensor(ans, device=device),
            memory_capped=capped,
        )
        if corrupted:
            corr, cmask = tokenize_left_padded(model, [corr_text[i] for i in idx])
            if corr.shape != clean.shape or not torch.equal(cmask, mask):
                bad = [examples[i].id for i in idx]
                raise InputError(
                    f"task {task.name!r}: clean and corrupted prompts differ in token length (among {bad})"
                )
            batch.corrupted = corr.to(device)
            batch.corrupted_answer = torch.tensor(
                [
                    answer_token(
                        model,
                        examples[i].corrupted_answer,
                        chat=chat,
                        prompt=examples[i].corrupted_prompt,
                    )
                    for i in idx
                ],
                device=device,
            )
            same = (batch.answer == batch.corrupted_answer).nonzero()
            if len(same):
                raise InputError(
                    f"task {task.name!r}: example {batch.ids[int(same[0])]!r}: answer and corrupted answer share their first token"
                )
        batches.append(batch)
    return batches


def _groups(
    order, lengths, batch_size: int, rows_for_width, batch_padding, task: str
) -> tuple[list[list[int]], bool]:
    """``order`` (by length, shortest first) in batches, and whether ``rows_for_width`` cut
    them (a warning says so)."""
    from interp_heads.generation.decode import padding_budget_groups

    plain = padding_budget_groups(order, lengths, batch_size, batch_padding)
    if rows_for_width is None:
        return plain, False
    rows_for_width(max(lengths))  # refuses a prompt that cannot fit even alone (InputError)
    groups = padding_budget_groups(order, lengths, batch_size, batch_padding, rows_for_width)
    if groups == plain:
        return groups, False
    sizes = [len(g) for g in groups]
    warnings.warn(
        f"task {task!r}: gradient batches of {min(sizes)} to {max(sizes)} examples, "
        f"not {batch_size}: as many as the free memory holds (attribution.memory)",
        stacklevel=3,
    )
    return groups, True


def logit_diff(
    logits: Float[torch.Tensor, "... batch d_vocab"], batch: Batch
) -> Float[torch.Tensor, "... batch"]:
    """Logit of the answer's first token minus that of the corrupted answer's."""
    a = logits.gather(-1, batch.answer.expand(logits.shape[:-1])[..., None])[..., 0]
    b = logits.gather(-1, batch.corrupted_answer.expand(logits.shape[:-1])[..., None])[..., 0]
    return a - b


def answer_logprob(
    logits: Float[torch.Tensor, "... batch d_vocab"], batch: Batch
) -> Float[torch.Tensor, "... batch"]:
    """Log-probability of the answer's first token."""
    logp = logits.float().log_softmax(-1)
    return logp.gather(-1, batch.answer.expand(logits.shape[:-1])[..., None])[..., 0]


@contextmanager
def frozen_params(model: torch.nn.Module) -> Iterator[None]:
    """Parameters ``requires_grad=False`` inside (activation gradients only), restored after."""
    flags = [(p, p.requires_grad) for p in model.parameters()]
    try:
        for p, _ in flags:
            p.requires_grad_(False)
        yield
    finally:
        for p, flag in flags:
            p.requires_grad_(flag)
