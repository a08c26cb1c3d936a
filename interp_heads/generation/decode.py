"""Batched greedy generation with a KV cache, hooks active on every step (sampling on request).

TransformerLens' ``HookedTransformer.generate`` re-runs hooks awkwardly and is slow; here prompts
are sorted by length, left-padded into batches, run once through the model to fill a
``HookedTransformerKeyValueCache``, then extended one token at a time. Hooks passed as
``fwd_hooks`` (or added by a context manager such as ``interp_heads.interventions.masks.mask_heads``) fire on
the prompt pass and on every generated token, so a head mask holds for the whole answer.

``generate(model, "1 + 1 = ")`` with one string returns one string, as TransformerLens'
``model.generate`` does; a list of prompts returns a list. Arguments are checked first
(``generation.checks``): a prompt that does not fit the model's context with ``max_new_tokens``,
an empty prompt or a batch size below 1 is refused in one line.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from interp_heads.errors import InputError
from interp_heads.generation import checks
from interp_heads.generation.fast_attention import fast_attention as fused_attention
from interp_heads.generation.kv_cache import KVCache
from interp_heads.generation.logits import final_logits, last_logits  # noqa: F401 (re-exported)
from interp_heads.generation.sampling import Sampling
from interp_heads.model_info import model_info, update_info
from interp_heads.models.tl_compat import HookedTransformer

# Fused attention by default only where measured not slower, with the same greedy tokens
# (bench/speed/bench_generation.py, docs/performance.md); other device types keep TransformerLens' path.
FAST_ATTENTION_DEFAULT = {"cpu": True}
# The prompt pass's pieces (prefill_groups): padding at most this fraction of a batch's tokens,
# and on these device types at most this many positions (rows x width) a piece (measured on 2
# CPU cores: bench/speed/bench_prefill_pieces.py; other device types: no cap).
PREFILL_PADDING = 1 / 64
PREFILL_PADDING_MIN = 64
PREFILL_POSITIONS = {"cpu": 2048}
# Rows that stopped leave the batch once at least 1/DROP_EVERY of the computed rows have stopped.
DROP_EVERY = 8


def stop_token_ids(model: HookedTransformer) -> set[int]:
    """Token ids that end an answer: EOS, ``<|im_end|>`` and ``<|endoftext|>`` when present."""
    tok = model.tokenizer
    ids = {tok.eos_token_id} if tok.eos_token_id is not None else set()
    vocab = tok.get_vocab()
    for name in ("<|im_end|>", "<|endoftext|>", "<|eot_id|>"):
        if name in vocab:
            ids.add(vocab[name])
    return ids


def vocab_token_id(model: HookedTransformer, text: str) -> int:
    """Id of the vocabulary token spelled ``text`` (``tokenizer.convert_tokens_to_ids``, as the
    Cognitive Mirrors study finds its ``"]"`` stop); ``InputError`` when the vocabulary has none."""
    tok = model.tokenizer
    tid = tok.convert_tokens_to_ids(text)
    if tid is None or (tid == tok.unk_token_id and text != tok.unk_token):
        raise InputError(f"the tokenizer has no token {text!r} to stop generation at")
    return int(tid)


def newline_tables(model: HookedTransformer) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-token booleans over the vocabulary: has a newline, has text, has text before a newline.

    Made once per model (``model_info``); used to stop an answer at the end of its first non-empty line.
    """
    cached = model_info(model).newline_tables
    if cached is not None:
        return cached
    # ids past the tokenizer's (a vocabulary padded for speed, e.g. Qwen2, Pythia) decode to ""
    known = min(len(model.tokenizer), model.cfg.d_vocab)
    texts = model.tokenizer.batch_decode([[i] for i in range(known)])
    texts += [""] * (model.cfg.d_vocab - len(texts))
    has_nl = torch.tensor(["\n" in t for t in texts])
    has_text = torch.tensor([bool(t.strip()) for t in texts])
    text_then_nl = torch.tensor(["\n" in t and bool(t.split("\n", 1)[0].strip()) for t in texts])
    return update_info(model, newline_tables=(has_nl, has_text, text_then_nl)).newline_tables


def tokenize_left_padded(
    model: HookedTransformer, prompts: Sequence[str], prepend_bos: bool | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Tokens ``[batch, pos]`` and attention mask, left-padded, as TransformerLens would tokenize."""
    return left_padded(model, token_rows(model, prompts, prepend_bos))


def token_rows(model, prompts: Sequence[str], prepend_bos: bool | None = None) -> list:
    """Each prompt's token ids (1-D), as TransformerLens would tokenize it alone."""
    if prepend_bos is None:
        prepend_bos = model.cfg.default_prepend_bos
    return [model.to_tokens(p, prepend_bos=prepend_bos, move_to_device=False)[0] for p in prompts]


def left_padded(model, rows: Sequence[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Token rows as one left-padded batch: tokens ``[batch, pos]`` and attention mask."""
    width = max(len(r) for r in rows)
    pad = model.tokenizer.pad_token_id
    tokens = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        tokens[i, width - len(r) :] = r
        mask[i, width - len(r) :] = 1
    return tokens, mask


@torch.inference_mode()
def generate_tokens(
    model: HookedTransformer,
    prompts: str | Sequence[str],
    max_new_tokens: int = 10,
    *,
    batch_size: int = 32,
    fwd_hooks: Sequence = (),
    use_cache: bool = True,
    stop_at_eos: bool = True,
    stop_at_newline: bool = False,
    stop_after: str | None = None,
    prepend_bos: bool | None = None,
    on_batch: Callable[[list[int]], None] | None = None,
    fast_attention: bool | None = None,
    sampling: Sampling | None = None,
    progress: bool = False,
    prefixes=None,
    batch_padding: int | None = None,
    copies: int = 1,
) -> list[list[int]] | list[int]:
    """Greedy continuations (token ids, stop token excluded) for each prompt, in input order.

    One string gives one list of ids. ``stop_at_newline`` ends a row once its first non-empty
    line is complete (the newline token is kept); answers are scored on that line only, so the
    rest would be wasted work. ``stop_after`` ends a row after the vocabulary token of that text,
    which is kept (``"]"``: the Cognitive Mirrors format's JSON answer; :func:`vocab_token_id`).
    ``on_batch`` is called with the prompt indices of each batch, in row order, before the batch
    runs (a per-row mask such as ``interp_heads.interventions.row_masks.mask_rows`` learns its
    rows there), and again with the indices left when greedy rows that stopped leave the batch
    (a cache that can drop rows: ``hooked``; later steps compute the live rows only).
    ``fast_attention`` computes ``z`` with PyTorch's fused attention
    (``interp_heads.generation.fast_attention``; hooks on ``hook_z`` and q/k/v still fire, a hook
    on the pattern or scores switches a layer back); ``None``: :data:`FAST_ATTENTION_DEFAULT`
    for the model's device type. ``sampling``: a :class:`~interp_heads.generation.sampling.Sampling`
    with ``temperature > 0`` samples instead of taking the arg-max (None: greedy; :func:`generate`
    takes its ``temperature``, ``top_p`` and ``seed`` as Hugging Face's ``generate`` does).
    ``progress`` shows a bar over prompts. ``prefixes``: a
    :class:`~interp_heads.generation.prefix.PromptPrefixes` of these prompts (same ``batch_size``
    and ``prepend_bos``), whose unmasked prompt passes each batch starts from; valid only while
    every active hook leaves the prefix's positions alone: the prompt but its last token
    (``positions="last"``), the whole prompt (``whole=True``: ``positions="generated"``).
    ``batch_padding``: a batch is also cut before it would hold more than this many padding
    positions (:func:`batches`; None: ``batch_size`` prompts each). ``copies``: the prompts are
    generated that many times over, each batch with its copies in one batch of ``copies`` times
    its rows (copy-major) that starts from the batch's one prefix; the result lists copy ``c`` of
    prompt ``i`` at ``c * len(prompts) + i``, and ``on_batch`` gets those indices (the conditions
    of a packed sweep, each copy masked by its own condition: ``execution.packed``).
    """
    single = isinstance(prompts, str)
    prompts = checks.prompt_list([prompts] if single else prompts)
    fwd_hooks = checks.hook_list(fwd_hooks)
    checks.positive_int(max_new_tokens, "max_new_tokens")
    checks.positive_int(batch_size, "batch_size")
    checks.positive_int(copies, "copies")
    if single and copies > 1:
        raise InputError("generate_tokens: copies needs a list of prompts, not one string")
    if batch_padding is not None:
        checks.positive_int(batch_padding, "batch_padding", least=0)
    sampling = Sampling() if sampling is None else sampling
    if prepend_bos is None:
        prepend_bos = model.cfg.default_prepend_bos
    checks.check_fits(model, prompts, max_new_tokens, prepend_bos)
    stops = stop_token_ids(model) if stop_at_eos else set()
    after = {vocab_token_id(model, stop_after)} if stop_after is not None else set()
    n = len(prompts)
    out: list[list[int] | None] = [None] * (n * copies)
    device = model.cfg.device
    generator = sampling.generator(device)
    bar = _progress(len(prompts) * copies, progress)
    with model.hooks(fwd_hooks=list(fwd_hooks)), attention_path(model, fast_attention), bar:
        for idx, tokens, mask in batches(model, prompts, batch_size, prepend_bos, batch_padding):
            prefix = prefixes.get(tokens, mask) if prefixes is not None and use_cache else None
            if copies > 1:
                idx = [c * n + i for c in range(copies) for i in idx]
                tokens, mask = tokens.repeat(copies, 1), mask.repeat(copies, 1)
            if on_batch is not None:
                on_batch(idx)
            nl = newline_tables(model) if stop_at_newline else None
            rows = _greedy(
                model, tokens.to(device), mask.to(device), max_new_tokens, stops, use_cache, nl,
                after, pick=lambda logits: sampling.pick(logits, generator), prefix=prefix,
                on_rows=_row_callback(idx, on_batch) if sampling.greedy and use_cache else None,
            )  # fmt: skip
            for i, row in zip(idx, rows, strict=True):
                out[i] = row
            bar.update(len(idx))
    return out[0] if single else out  # type: ignore[return-value]


def _row_callback(idx: list[int], on_batch):
    """What to call when rows leave a batch: ``on_batch`` with the prompt indices left."""
    if on_batch is None:
        return lambda rows: None
    return lambda rows: on_batch([idx[r] for r in rows])


def batches(
    model,
    prompts: Sequence[str],
    batch_size: int,
    prepend_bos: bool | None,
    batch_padding: int | None = None,
    *,
    in_order: bool = False,
):
    """``(indices, tokens, mask)`` of each batch, left-padded: prompts sorted by length in
    characters (``in_order``: in their own order), ``batch_size`` a batch. With
    ``batch_padding`` a batch is also cut before its padding (its prompts times its longest
    prompt in tokens, less their tokens) would pass ``batch_padding`` positions, so prompts of
    very different lengths are not padded to the longest of ``batch_size``; batches of prompts
    of about one length are never cut, and batches the budget does not cut are the same batches
    as without it."""
    order = list(range(len(prompts))) if in_order else length_order(prompts)
    rows = token_rows(model, prompts, prepend_bos)  # each prompt tokenized once
    groups = padding_budget_groups(order, [len(r) for r in rows], batch_size, batch_padding)
    for idx in groups:
        yield (idx, *left_padded(model, [rows[i] for i in idx]))


def length_order(prompts: Sequence[str]) -> list[int]:
    """Prompt indices by length in characters, shortest first (ties in input order): the order
    :func:`batches` cuts into batches."""
    return sorted(range(len(prompts)), key=lambda i: len(prompts[i]))


def padding_budget_groups(
    order: Sequence[int],
    lengths: Sequence[int],
    batch_size: int,
    batch_padding: int | None = None,
    rows_for_width: Callable[[int], int] | None = None,
) -> list[list[int]]:
    """``order`` cut into batches: a new batch starts when the next prompt would take the batch
    past ``batch_size`` prompts, its padding past ``batch_padding`` positions (its prompts times
    the longest of ``lengths`` among them, less the sum of their ``lengths``; None: no limit) or
    its prompts past ``rows_for_width(its longest)`` (a gradient pass's memory,
    ``attribution.memory.gradient_rows``; None: no limit). With neither limit: consecutive
    slices of ``batch_size``."""
    groups: list[list[int]] = []
    longest = real = 0
    for i in order:
        if groups:
            n, wider = len(groups[-1]) + 1, max(longest, lengths[i])
            if (
                n <= batch_size
                and (batch_padding is None or n * wider - (real + lengths[i]) <= batch_padding)
                and (rows_for_width is None or n <= rows_for_width(wider))
            ):
                groups[-1].append(i)
                longest, real = wider, real + lengths[i]
                continue
        groups.append([i])
        longest = real = lengths[i]
    return groups


def prefill_groups(lengths: Sequence[int], device=None) -> list[list[int]]:
    """A batch's rows (indices into ``lengths``, their token counts) in pieces for the prompt
    pass: by length, a new piece whenever its padding would pass :data:`PREFILL_PADDING` of the
    batch's tokens (at least :data:`PREFILL_PADDING_MIN` positions) or, on a device type of
    :data:`PREFILL_POSITIONS`, its positions (rows x its longest) that cap. A prompt pass is
    compute-bound, so a padding position costs as much as a token, and on 2 CPU cores a pass
    over 48 x 453 positions costs 1.8x more a position than passes of about 2,000
    (docs/performance.md, "The prompt pass in pieces"). Rows of about one length and few
    positions stay one piece."""
    budget = max(PREFILL_PADDING_MIN, int(PREFILL_PADDING * sum(lengths)))
    cap = PREFILL_POSITIONS.get(torch.device(device).type) if device is not None else None
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    rows = None if cap is None else (lambda width: max(1, cap // max(1, width)))
    return padding_budget_groups(order, lengths, len(lengths), budget, rows)


def attention_path(model, fast_attention: bool | None):
    """The fused attention path where ``fast_attention`` (None: the device type's default)."""
    if fast_attention is None:
        fast_attention = FAST_ATTENTION_DEFAULT.get(torch.device(model.cfg.device).type, False)
    return fused_attention(model, fast_attention)


def _progress(total: int, enabled: bool):
    """A progress bar over prompts (a no-op bar when disabled)."""
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="generate", unit=" prompt", disable=not enabled)


def _greedy(
    model, tokens, mask, max_new_tokens, stops, use_cache, nl=None, after=(), pick=None,
    prefix=None, on_rows=None,
) -> list[list[int]]:  # fmt: skip
    """Each row's answer ids. ``on_rows``: given, rows that stopped leave the batch (when the
    cache can drop them) and it is called with the batch rows still computed, in order."""
    batch, device = tokens.shape[0], tokens.device
    capacity = tokens.shape[1] + max_new_tokens
    cache = KVCache(model, batch, prefix and prefix.kv, capacity) if use_cache else None
    first = prefix.logits if prefix is not None else None  # the whole prompt read: step 0's
    if first is not None and len(first) != batch:  # one prefix under several conditions
        first = first.repeat(batch // len(first), 1)
    stop_tensor = torch.tensor(sorted(stops), dtype=torch.long, device=device)
    after_tensor = torch.tensor(sorted(after), dtype=torch.long, device=device)
    if nl is not None:
        has_nl, has_text, text_then_nl = (t.to(device) for t in nl)
    seen_text = torch.zeros(batch, dtype=torch.bool, device=device)
    done = torch.zeros(batch, dtype=torch.bool, device=device)
    length = torch.full((batch,), max_new_tokens, dtype=torch.long, device=device)
    live = torch.arange(batch, device=device)  # the batch rows computed (all, until some leave)
    steps: list[torch.Tensor] = []
    step_input, step_mask = tokens, mask
    if prefix is not None and first is None:  # every prompt position but the last is cached
        step_input, step_mask = tokens[:, -1:], mask[:, -1:]
    pad = model.tokenizer.pad_token_id
    for step in range(max_new_tokens):
        if step == 0 and first is not None:
            logits = first
        elif use_cache and (step or prefix is not None):
            logits = cache.step(step_input, step_mask, mask)
        elif use_cache:  # the prompt pass (leading tokens all rows share read once, if allowed)
            logits = cache.prompt_pass(tokens, mask)
        else:
            logits = last_logits(model, tokens, mask)
        best = logits.argmax(dim=-1) if pick is None else pick(logits)
        nxt = torch.full((batch,), pad, dtype=torch.long, device=device)
        nxt[live] = best
        nxt = torch.where(done, pad, nxt)
        steps.append(nxt)
        ends = torch.isin(nxt, stop_tensor) & ~done  # stop token: not part of the answer
        length = torch.where(ends, step, length)
        newly = ends
        if nl is not None:
            line_end = ((has_nl[nxt] & seen_text) | text_then_nl[nxt]) & ~done & ~ends
            length = torch.where(line_end, step + 1, length)  # newline token kept
            seen_text = seen_text | has_text[nxt]
            newly = newly | line_end
        if len(after):
            kept_end = torch.isin(nxt, after_tensor) & ~done & ~newly  # the token is kept
            length = torch.where(kept_end, step + 1, length)
            newly = newly | kept_end
        done = done | newly
        if bool(done.all()):
            break
        stay = ~done[live]
        if on_rows is not None and _worth_dropping(stay) and cache.keep(stay.nonzero()[:, 0]):
            live, tokens, mask = live[stay], tokens[stay], mask[stay]
            on_rows(live.tolist())
        step_input = nxt[live][:, None]
        step_mask = torch.ones((len(live), 1), dtype=mask.dtype, device=device)
        tokens = torch.cat([tokens, step_input], dim=1)
        mask = torch.cat([mask, step_mask], dim=1)
    generated = torch.stack(steps, dim=1).tolist()
    return [row[:n] for row, n in zip(generated, length.tolist(), strict=True)]


def _worth_dropping(stay: torch.Tensor) -> bool:
    """Whether enough computed rows stopped to move the others (a copy of their cache): an
    eighth of the batch, at least one row."""
    stopped = len(stay) - int(stay.sum())
    return stopped >= max(1, len(stay) // DROP_EVERY)


def generate(
    model: HookedTransformer,
    prompts: str | Sequence[str],
    max_new_tokens: int = 10,
    *,
    temperature: float = 0.0,
    top_p: float = 1.0,
    seed: int | None = None,
    **kwargs,
) -> list[str] | str:
    """Greedy continuations as text (special tokens dropped): one string for one string, else
    one per prompt, in input order. ``temperature > 0`` samples instead (``top_p``: nucleus
    sampling; ``seed``: reproducible draws; ``generation.sampling``).

    The other keyword arguments are those of :func:`generate_tokens` (``batch_size``,
    ``fwd_hooks``, ``use_cache``, ``stop_at_eos``, ``stop_at_newline``, ``stop_after``,
    ``prepend_bos``, ``progress``).

    Example:
        >>> generate(model, "1 + 1 = ", 3)
        '2'
        >>> generate(model, ["Paris is in", "Rome is in"], 3, temperature=0.8, seed=0)
        [' France', ' Italy']
    """
    if not isinstance(prompts, str):
        prompts = checks.prompt_list(prompts)
        if not prompts:
            raise InputError("generate: prompts is empty (give a string or a list of strings)")
    sampling = Sampling(temperature, top_p, seed)
    rows = generate_tokens(model, prompts, max_new_tokens, sampling=sampling, **kwargs)
    if isinstance(prompts, str):
        return model.tokenizer.decode(rows, skip_special_tokens=True)
    return [model.tokenizer.decode(r, skip_special_tokens=True) for r in rows]
