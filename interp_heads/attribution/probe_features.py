"""The probe's features and labels (``attribution.probe``): every head's ``hook_z`` per example.

Positions (``PROBE_POSITIONS``): ``last`` (the last prompt token), ``answer`` (the mean over the
reference answer's tokens, forced-decoded after the prompt), ``mean`` (over the prompt) and
``generated``, the Cognitive Mirrors study's own (``utils.get_llama_activations_pyvene``,
``get_importance.py``): the unmasked model answers greedily (stopping after ``]`` in the study's
format); the answer value of its last JSON block (the whole generation when it has none or
it does not parse), tokenized alone, is found in the generated ids as the study's
``find_subsequence`` finds it (whole, without its last token, without its first, or without
both; else every generated position); up to five of those positions (the study lets an LLM
choose five; here the first five) that were fed back to the model (the last generated token never
is) give the mean of ``z`` where that generated token is the input, read while the model
generates. A generation of one token gives the last prompt token.

Labels (``PROBE_LABELS``): ``tasks`` (each task is a label) or ``skills`` (each example's
cognitive skill, ``meta["skill"]`` of a CogQA file's sub-questions; a task without skills is
one label of its own name).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch
from jaxtyping import Float, Int

from interp_heads.attribution.inputs import uses_chat
from interp_heads.attribution.patching import run_cached, z_hook_names
from interp_heads.choices import PromptFormat
from interp_heads.errors import InputError
from interp_heads.generation.prefix import shared_prefixes
from interp_heads.heads import hook_z
from interp_heads.tasks.cognitive_mirrors import PLACEHOLDER, STOP_TOKEN, extract_answer
from interp_heads.tasks.prompts import render
from interp_heads.tasks.schema import Task

PROBE_POSITIONS = ("last", "answer", "mean", "generated")
PROBE_LABELS = ("tasks", "skills")
MAX_ANSWER_TOKENS = 5  # the study's five answer tokens


@dataclass
class ProbeData:
    """Per-head features of every example and its label (an index into ``tasks``, the label
    names: the tasks' names, or the skills)."""

    features: Float[torch.Tensor, "example feature d_feat"]
    labels: Int[torch.Tensor, " example"]
    ids: list[str]
    tasks: list[str]


def skill_of(task: Task, example) -> str:
    """An example's cognitive skill (a CogQA sub-question's), else its task's, else the task."""
    return example.meta.get("skill") or task.meta.get("skill") or task.name


def find_subsequence(sub: list[int], seq: list[int]) -> int:
    """The study's ``utils.find_subsequence``: where ``sub`` (without its last token) starts in
    ``seq``; else ``sub`` without its first token (start - 1); else without both; else -1."""
    for part, shift in ((sub[:-1] if len(sub) > 1 else sub, 0), (sub[1:], -1), (sub[1:-1], -1)):
        for i in range(len(seq) - len(part) + 1):
            if seq[i : i + len(part)] == part:
                return i + shift
    return -1


def answer_positions(model, generated: list[int]) -> list[int]:
    """Indices into ``generated`` of up to five answer tokens that were fed back to the model."""
    text = model.tokenizer.decode(generated, skip_special_tokens=True)
    answer = extract_answer(text)
    if answer is None or answer == PLACEHOLDER:
        answer = text
    ids = model.to_tokens(str(answer).strip(), prepend_bos=False, move_to_device=False)[0]
    start = find_subsequence(ids.tolist(), generated) if len(ids) else -1
    found = range(start, start + len(ids)) if start != -1 else range(len(generated) - 1)
    return [p for p in found if 0 <= p < len(generated) - 1][:MAX_ANSWER_TOKENS]


class _FedBackZ:
    """Every head's ``z`` at the last position of each forward pass of a generation, per prompt
    (its index in the batch's prompts), in order: the prompt's pass (unless it was read from a
    prefix, which fires no hook), then one per generated token fed back. ``on_batch`` follows
    the rows still computed (``generate_tokens`` drops rows that stopped)."""

    def __init__(self, n_layers: int):
        self.steps: dict[int, list[torch.Tensor]] = {}
        self._live: list[int] = []
        self._layers: list[torch.Tensor | None] = [None] * n_layers

    def on_batch(self, idx: list[int]) -> None:
        self._live = list(idx)

    def hook(self, layer: int):
        def record(z, hook):
            self._layers[layer] = z[:, -1].detach().float().cpu()
            if layer == len(self._layers) - 1:  # the step's last layer: one [layer head d_head]
                step = torch.stack(self._layers, 1)  # per row computed, in batch order
                for i, row in zip(self._live, step, strict=True):
                    self.steps.setdefault(i, []).append(row)

        return record


def _generated_features(model, texts, fmt: str, max_new_tokens: int, batch_size: int):
    """``[prompt, layer, head, d_head]``: the mean of ``z`` where each chosen answer token was fed
    back, read while the unmasked model generates (no second pass over prompt and answer).

    The prompts' pass is the shared one (``generation.prefix.shared_prefixes``: the unmasked
    reference answers and the sweep's masked conditions at the generated positions read it too).
    They are generated ``batch_size`` at a time in ``generate_tokens``' own order (by length in
    characters), so the batches are those of one call and only one batch's steps are held."""
    from interp_heads.generation.decode import generate_tokens, length_order

    json_answers = str(fmt) == PromptFormat.COGNITIVE_MIRRORS
    prefixes = shared_prefixes(model, texts, batch_size=batch_size, whole=True)
    first = 1 if len(prefixes) else 0  # a prompt pass read from the prefix fires no hook
    order = length_order(texts)
    out: list[torch.Tensor | None] = [None] * len(texts)
    last: list[int] = []  # nothing fed back, the prompt pass not seen: the last prompt token
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        seen = _FedBackZ(model.cfg.n_layers)
        hooks = [(hook_z(layer), seen.hook(layer)) for layer in range(model.cfg.n_layers)]
        gens = generate_tokens(
            model, [texts[i] for i in idx], max_new_tokens, batch_size=batch_size,
            stop_at_newline=not json_answers, stop_after=STOP_TOKEN if json_answers else None,
            fwd_hooks=hooks, on_batch=seen.on_batch, prefixes=prefixes,
        )  # fmt: skip
        for row, (i, gen) in enumerate(zip(idx, gens, strict=True)):
            steps, pos = seen.steps.get(row, []), answer_positions(model, list(gen))
            if pos:
                out[i] = torch.stack([steps[p + 1 - first] for p in pos]).mean(0)
            elif first == 0:
                out[i] = steps[0]
            else:
                last.append(i)
    for i, z in zip(last, _last_token_z(model, [texts[i] for i in last], batch_size), strict=True):
        out[i] = z
    return torch.stack(out)  # type: ignore[arg-type]


def _last_token_z(model, texts: list[str], batch_size: int) -> list[torch.Tensor]:
    """Each prompt's ``z`` at its last token, from one pass over those prompts."""
    rows = [_token_row(model, t) for t in texts]
    return [
        z
        for s in range(0, len(rows), batch_size)
        for z in _batch_features(model, rows[s : s + batch_size], [], "last")
    ]


def _token_row(model, text: str) -> torch.Tensor:
    return model.to_tokens(text, prepend_bos=model.cfg.default_prepend_bos, move_to_device=False)[0]


def _rows(model, task: Task, fmt: str, position: str):
    """Token rows and how many of their last tokens the feature averages (0: see position)."""
    texts = render(model, [e.prompt for e in task], fmt=fmt)
    chat = uses_chat(model, fmt)
    rows, n_answer = [], []
    for text, ex in zip(texts, task, strict=True):
        row, n = _token_row(model, text), 0
        if position == "answer":
            ans = ex.answer.strip()
            if not chat and not text[-1:].isspace():
                ans = " " + ans
            toks = model.to_tokens(ans, prepend_bos=False, move_to_device=False)[0]
            if len(toks) == 0:
                raise InputError(f"task {task.name!r}: example {ex.id!r} has an empty answer")
            row, n = torch.cat([row, toks]), len(toks)
        rows.append(row)
        n_answer.append(n)
    return rows, n_answer


@torch.inference_mode()
def _batch_features(model, rows, n_answer, position: str) -> torch.Tensor:
    """``[batch, layer, head, d_head]``: z at the position, or its mean over the chosen tokens."""
    width = max(len(r) for r in rows)
    tokens = torch.full((len(rows), width), model.tokenizer.pad_token_id, dtype=torch.long)
    attn = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        tokens[i, width - len(r) :] = r
        attn[i, width - len(r) :] = 1
    chosen = attn
    if position == "answer":  # the last n_answer positions of each row
        chosen = attn * (torch.arange(width)[None, :] >= width - torch.tensor(n_answer)[:, None])
    device = model.cfg.device
    cache, _ = run_cached(model, tokens.to(device), attn.to(device), z_hook_names(model))
    z = torch.stack([cache[hook_z(layer)] for layer in range(model.cfg.n_layers)], 1).float().cpu()
    if position == "last":
        return z[:, :, -1]
    w = chosen.float()[:, None, :, None, None]  # [batch, 1, pos, 1, 1]
    return (z * w).sum(2) / w.sum(2)


def _task_features(model, task: Task, fmt: str, position: str, max_new_tokens: int, batch_size):
    """``[example, layer, head, d_head]`` of one task's examples at ``position``."""
    if position == "generated":
        texts = render(model, [e.prompt for e in task], fmt=fmt)
        return _generated_features(model, texts, fmt, max_new_tokens, batch_size)
    rows, n_answer = _rows(model, task, fmt, position)
    return torch.cat(
        [
            _batch_features(model, rows[s : s + batch_size], n_answer[s : s + batch_size], position)
            for s in range(0, len(rows), batch_size)
        ]
    )


def _label_names(tasks: list[Task], labels: str, names: list[str] | None) -> list[str]:
    if labels not in PROBE_LABELS:
        raise InputError(f"unknown probe labels {labels!r}; use one of {', '.join(PROBE_LABELS)}")
    if names is None and labels == "tasks":
        names = [t.name for t in tasks]
    elif names is None:
        names = list(dict.fromkeys(skill_of(t, e) for t in tasks for e in t))
    if len(set(names)) < 2 or len(set(names)) != len(names):
        raise InputError(f"the probe needs two or more distinct {labels} (its labels), got {names}")
    return names


def head_features(
    model,
    tasks: list[Task],
    fmts: Mapping[str, str] | str = "auto",
    *,
    position: str = "answer",
    layer_mean: bool = True,
    batch_size: int = 8,
    labels: str = "tasks",
    label_names: list[str] | None = None,
    max_new_tokens: int = 32,
) -> ProbeData:
    """Every head's ``z`` feature on every example of ``tasks``, labelled by task or by skill
    (``label_names``: the labels' order, e.g. held-out rows read against a trained probe;
    ``max_new_tokens``: the answer's budget at position ``generated``).

    Raises:
        InputError: fewer than two labels, a label twice, an unknown position or labelling.
    """
    if position not in PROBE_POSITIONS:
        raise InputError(
            f"unknown probe position {position!r}; use one of {', '.join(PROBE_POSITIONS)}"
        )
    names = _label_names(tasks, labels, label_names)
    feats, ys, ids = [], [], []
    for task in tasks:
        fmt = fmts if isinstance(fmts, str) else fmts[task.name]
        feats.append(_task_features(model, task, fmt, position, max_new_tokens, batch_size))
        key = (
            (lambda e, t=task: t.name) if labels == "tasks" else (lambda e, t=task: skill_of(t, e))
        )
        unknown = {key(e) for e in task} - set(names)
        if unknown:
            raise InputError(f"task {task.name!r}: labels {sorted(unknown)} not in {names}")
        ys += [names.index(key(e)) for e in task]
        ids += [e.id for e in task]
    z = torch.cat(feats)  # [example, layer, head, d_head]
    if layer_mean:
        z = torch.cat([z, z.mean(2, keepdim=True).expand_as(z)], -1)
    return ProbeData(z.flatten(1, 2), torch.tensor(ys), ids, names)
