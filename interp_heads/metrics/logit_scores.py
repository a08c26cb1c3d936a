"""The forward pass of the logit metrics (``metrics.logits``): teacher-forced batches of a task
(:func:`prepare`, once per task) and one condition's scores under its mask (:func:`score_condition`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from interp_heads.errors import InputError
from interp_heads.generation.logits import final_logits
from interp_heads.interventions.kinds import prompt_ends
from interp_heads.interventions.masks import mask_heads
from interp_heads.models.backends import backend_of


@dataclass
class ForcedBatch:
    """Teacher-forced rows: ``tokens``/``mask`` left-padded prompt + gold answer; ``rows``: the
    examples' indices; ``last``: each row's last prompt position; ``answer``: each row's gold
    answer tokens; ``distractor``: each row's distractor first token (-1: none)."""

    tokens: torch.Tensor
    mask: torch.Tensor
    rows: list[int]
    last: torch.Tensor
    answer: list[torch.Tensor]
    distractor: torch.Tensor


@dataclass
class LogitInputs:
    """One task's teacher-forced batches and the unmasked model's next-token log-probabilities at
    each example's last prompt position (``unmasked[example, vocab]``, for ``kl_unmasked``)."""

    n: int
    batches: list[ForcedBatch]
    unmasked: torch.Tensor | None = None


def continuation(prompt: str) -> str:
    """How an answer follows ``prompt``: after a space unless the prompt ends with whitespace."""
    return "" if prompt[-1:].isspace() else " "


def _first_distractor(model, example, gold: int, lead: str) -> int:
    backend = backend_of(model)
    candidates = [*example.distractors, example.corrupted_answer or ""]
    for text in candidates:
        toks = backend.text_tokens(model, lead + text.strip()) if text.strip() else []
        if toks and int(toks[0]) != gold:
            return int(toks[0])
    return -1


def answer_tokens(model, task, prompts, metrics) -> tuple[list[list[int]], list[int]]:
    """Each example's gold answer tokens after its rendered prompt and its distractor's first
    token (-1: none), checked: the pipeline calls this before a run folder is touched.

    Raises:
        InputError: an empty answer, or ``logit_diff`` on examples with no distractor.
    """
    backend, names = backend_of(model), {getattr(m, "name", m) for m in metrics}
    examples = list(task)
    answers, distractors = [], []
    for e, prompt in zip(examples, prompts, strict=True):
        lead = continuation(prompt)
        toks = backend.text_tokens(model, lead + e.answer.strip())
        if not toks:
            raise InputError(f"task {task.name!r}: example {e.id!r} has an empty answer")
        answers.append(toks)
        distractors.append(_first_distractor(model, e, int(toks[0]), lead))
    missing = [e.id for e, d in zip(examples, distractors, strict=True) if d < 0]
    if "logit_diff" in names and missing:
        raise InputError(
            f"logit_diff: task {task.name!r} has no distractor for {len(missing)} of "
            f"{len(examples)} examples ({missing[:3]}): give them `distractors` or a "
            "`corrupted_answer` whose first token differs from the answer's, or drop logit_diff"
        )
    return answers, distractors


def prepare(model, task, prompts, metrics, *, batch_size: int = 16) -> LogitInputs:
    """Teacher-forced batches of ``task``'s examples after their rendered ``prompts``, and the
    unmasked distribution when ``kl_unmasked`` is asked for.

    Raises:
        InputError: an empty answer, or ``logit_diff`` on examples with no distractor.
    """
    names = {m.name for m in metrics}
    examples, device = list(task), model.cfg.device
    answers, distractors = answer_tokens(model, task, prompts, metrics)
    batches = []
    for start in range(0, len(examples), batch_size):
        rows = list(range(start, min(start + batch_size, len(examples))))
        prompt_toks = [model.to_tokens(prompts[i], move_to_device=False)[0] for i in rows]
        seqs = [
            torch.cat([p, torch.tensor(answers[i])]) for p, i in zip(prompt_toks, rows, strict=True)
        ]
        tokens, mask = _left_pad(model, seqs)
        width = tokens.shape[1]
        batches.append(
            ForcedBatch(
                tokens.to(device),
                mask.to(device),
                rows,
                torch.tensor([width - len(answers[i]) - 1 for i in rows]),
                [torch.tensor(answers[i]) for i in rows],
                torch.tensor([distractors[i] for i in rows]),
            )
        )
    inputs = LogitInputs(len(examples), batches)
    if "kl_unmasked" in names:
        inputs.unmasked = _last_logprobs(model, inputs)
    return inputs


def _left_pad(model, seqs: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows of token ids left-padded as ``generation.decode.tokenize_left_padded`` pads prompts."""
    width = max(len(s) for s in seqs)
    tokens = torch.full((len(seqs), width), model.tokenizer.pad_token_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        tokens[i, width - len(s) :], mask[i, width - len(s) :] = s, 1
    return tokens, mask


@torch.inference_mode()
def _forward(model, batch: ForcedBatch) -> torch.Tensor:
    """Log-probabilities ``[row, step, vocab]`` (float32) at each row's last prompt position
    (step 0) and the answer positions after it: the residual stream is gathered at those
    positions before the final norm and unembedding (``generation.logits.final_logits``), so the
    vocabulary is unembedded at a few positions per row, not at every prompt token."""
    resid = model(batch.tokens, attention_mask=batch.mask, stop_at_layer=model.cfg.n_layers)
    steps = max(len(a) for a in batch.answer)
    width = batch.tokens.shape[1]
    pos = (batch.last[:, None] + torch.arange(steps)[None]).clamp(max=width - 1)
    rows = torch.arange(len(batch.rows))[:, None].expand_as(pos)
    picked = resid[rows.to(resid.device), pos.to(resid.device)]  # [row, step, d]
    flat = picked.reshape(-1, 1, picked.shape[-1])
    logits = final_logits(model, flat).reshape(len(batch.rows), steps, -1)
    return torch.log_softmax(logits.float(), dim=-1).cpu()


def _last_logprobs(model, inputs: LogitInputs) -> torch.Tensor:
    """The unmasked model's next-token log-probabilities at each example's last prompt position."""
    return torch.cat([_forward(model, batch)[:, 0] for batch in inputs.batches])


def score_condition(
    model, inputs: LogitInputs, metrics, heads, kind, values, positions="all"
) -> dict[str, list[float]]:
    """``{metric name: one score per example}`` of the logit ``metrics`` with ``heads`` masked
    (``kind``, ``values`` as ``mask_heads`` takes them): one forward pass per batch."""
    if positions != "all":
        raise InputError(
            f"logit metrics mask every position of the teacher-forced pass; positions="
            f"{positions!r} is not supported (use positions = 'all')"
        )
    out = {m.name: [0.0] * inputs.n for m in metrics}
    with mask_heads(model, heads, kind, values=values, warn_if_idle=False):
        for batch in inputs.batches:
            with prompt_ends(batch.last):  # position-wise values align to the prompt's end
                lp = _forward(model, batch)
            for j, row in enumerate(batch.rows):
                scores = _row_scores(lp[j], batch, j, inputs, row)
                for name in out:
                    out[name][row] = scores[name]
    return out


def _row_scores(lp, batch: ForcedBatch, j: int, inputs: LogitInputs, row: int) -> dict:
    """One example's scores from its log-probabilities ``lp[step, vocab]`` (step 0: the last
    prompt position, which predicts the answer's first token)."""
    answer = batch.answer[j]
    d = int(batch.distractor[j])
    scores = {"answer_logprob": float(lp[torch.arange(len(answer)), answer].sum())}
    # log-probabilities differ from logits by one constant per position: the same difference
    scores["logit_diff"] = float(lp[0, answer[0]] - lp[0, d]) if d >= 0 else float("nan")
    if inputs.unmasked is not None:
        p = inputs.unmasked[row]
        pe = p.exp()  # tokens of probability 0 add nothing (not 0 * -inf)
        scores["kl_unmasked"] = float(torch.where(pe > 0, pe * (p - lp[0]), 0.0).sum())
    return scores
