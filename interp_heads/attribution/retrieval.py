"""Retrieval score of every head, as Wu et al. (2024, "Retrieval Head Mechanistically Explains
Long-Context Factuality", repository ``nightdessert/Retrieval_Head``) define it.

On needle-in-a-haystack prompts the model copies a needle from its context. At each step that
produces a needle token, a head *copy-pastes* when its arg-max attention lands on a position inside
the needle that holds the very token being produced. A head's retrieval score is its share of
copy-paste steps: hits / needle length, averaged over prompts. Wu et al. call heads scoring at least
0.1 *retrieval heads* and find 3-6% of heads above it across model families.

Here the needle is the answer's occurrence in the prompt (the first place its token sequence
appears as the model would generate it, else as tokenized on its own, without a leading space), and the answer tokens are fed after the
prompt (teacher forcing): on correctly answered prompts, which attribution uses, these are the steps
at which greedy decoding generates the needle. Prompts whose answer does not appear are skipped.
"""

from __future__ import annotations

import torch
from jaxtyping import Float

from interp_heads.attribution.inputs import uses_chat
from interp_heads.models.tl_compat import HookedTransformer
from interp_heads.tasks.prompts import render
from interp_heads.tasks.schema import Task

THRESHOLD = 0.1  # Wu et al.'s retrieval-head threshold


def needle_span(prompt_ids: list[int], answer_ids: list[int]) -> list[int]:
    """Positions of the needle: the first occurrence of ``answer_ids`` as a contiguous run of
    ``prompt_ids`` (empty: not in the prompt)."""
    n = len(answer_ids)
    for start in range(len(prompt_ids) - n + 1):
        if prompt_ids[start : start + n] == answer_ids:
            return list(range(start, start + n))
    return []


def _answer_ids(model: HookedTransformer, prompt: str, answer: str, chat: bool) -> list[int]:
    text = answer.strip()
    if not chat and not prompt[-1:].isspace():
        text = " " + text
    return model.to_tokens(text, prepend_bos=False, move_to_device=False)[0].tolist()


@torch.no_grad()
def retrieval_scores(
    model: HookedTransformer, task: Task, fmt: str = "auto", *, per_example: list | None = None
) -> tuple[Float[torch.Tensor, "layer head"], int]:
    """Retrieval score of every head on ``task`` and the number of prompts it was measured on;
    ``per_example`` receives each measured prompt's score ``[prompt layer head]``.

    Raises:
        ValueError: no prompt of the task contains its answer (not a retrieval task).
    """
    chat = uses_chat(model, fmt)
    prompts = render(model, [e.prompt for e in task], fmt=fmt)
    total = torch.zeros(model.cfg.n_layers, model.cfg.n_heads)
    names = {f"blocks.{layer}.attn.hook_pattern" for layer in range(model.cfg.n_layers)}
    used = 0
    for ex, prompt in zip(task, prompts, strict=True):
        prompt_ids = model.to_tokens(prompt, move_to_device=False)[0].tolist()
        answer_ids = _answer_ids(model, prompt, ex.answer, chat)
        span = needle_span(prompt_ids, answer_ids) or needle_span(
            prompt_ids, _answer_ids(model, " ", ex.answer, True)
        )
        if not span:
            continue
        tokens = torch.tensor([prompt_ids + answer_ids[:-1]], device=model.cfg.device)
        _, cache = model.run_with_cache(tokens, names_filter=names.__contains__)
        queries = torch.arange(len(answer_ids)) + len(prompt_ids) - 1
        produced = torch.tensor(answer_ids)
        in_span = torch.zeros(tokens.shape[1], dtype=torch.bool)
        in_span[span] = True
        one = torch.zeros_like(total)
        for layer in range(model.cfg.n_layers):
            pattern = cache[f"blocks.{layer}.attn.hook_pattern"][0].cpu()  # head q k
            top = pattern[:, queries].argmax(-1)  # head step
            hit = in_span[top] & (tokens[0].cpu()[top] == produced)
            one[layer] = hit.float().sum(-1) / len(answer_ids)
            total[layer] += one[layer]
        if per_example is not None:
            per_example.append(one[None])
        used += 1
    if not used:
        raise ValueError(
            f"retrieval_score: no prompt of task {task.name!r} contains its answer (needle); "
            "use it on retrieval tasks"
        )
    return total / used, used


def retrieval_heads(scores, threshold: float = THRESHOLD) -> list[tuple[int, int]]:
    """Heads whose retrieval score reaches ``threshold``, highest first (a ``HeadScores``)."""
    return [h for h in scores.top(scores.n_layers * scores.n_heads, "signed")
            if float(scores.scores[h]) >= threshold]  # fmt: skip
