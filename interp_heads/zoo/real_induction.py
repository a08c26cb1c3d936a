"""Induction on real weights: the heads TransformerLens' detector and activation patching agree
on, and how many of the toolkit's default TopK-8 are among them.

The task is the classic one (Olsson et al. 2022): a block of ``length`` random tokens followed by
the same block again. Its corrupted twin keeps the first block and replaces the second by fresh
random tokens (none of the first block's), so induction has nothing to copy there. Tokens are
drawn from the model's *word* tokens (a space and letters, each its own token when encoded
alone): ``transformer_lens.head_detector.detect_head`` takes strings, so a sequence must come
back as the same ids when its text is tokenized again, and a run of such tokens does (the
pre-tokenizer splits at each space); every sequence is checked. A vocabulary without word tokens
(a byte-level one) falls back to single letters.

Two independent readings of which heads do induction, both TransformerLens' own functions:

- the **detector**: ``detect_head(model, texts, "induction_head")``, each head's share of attention
  from a token of the second block to the position after that token's first occurrence (the
  ``"mul"`` measure, averaged over sequences); a head counts at :data:`DETECTOR_THRESHOLD`;
- **patching**: ``patching.get_act_patch_attn_head_out_all_pos``, each head's output (``hook_z``,
  every position) taken from the corrupted run into the clean run (noising, the direction of path
  patching, Wang et al. 2023); the metric is the mean log-prob of the correct next token over the
  second block's positions, reported as the drop normalised so that the clean run is 0 and the
  corrupted run 1; a head counts at :data:`PATCHING_THRESHOLD`.

The truth is their intersection. The toolkit's default method (``attribution.api
.default_method``: ``atp`` on a task with corrupted prompts) ranks the heads on the same
sequences cut into prompts (``as_task``), and its top ``k`` is scored against the truth by the
overlap and the hypergeometric tail ``P(X >= overlap)`` of ``k`` heads drawn at random.
"""

from __future__ import annotations

import random
import re
import time
from dataclasses import dataclass

import numpy as np
import torch

from interp_heads.errors import InputError
from interp_heads.heads import Head, head_label
from interp_heads.tasks.schema import Example, Task

# A head "is" an induction head at this detector score: the toolkit's own cut
# (``analysis.known_heads.THRESHOLDS``). The detector averages over every query row, the first
# block's too (no stripe there), so a perfect induction head scores 1/2 and 0.3 means 60 % of the
# copy's attention on the stripe; a head spreading its attention evenly over the earlier positions
# scores about ln 2 / (2 length) (0.02 at length 20).
DETECTOR_THRESHOLD = 0.3
# A head "matters" when noising it alone removes at least this share of the clean run's log-prob
# advantage over the corrupted run: 5 % of the effect, well above the run-to-run noise of one
# head's patch (the page reports the largest negative effect as a read of that noise).
PATCHING_THRESHOLD = 0.05
K = 8
_WORD, _LETTER = re.compile(r" [A-Za-z]{2,}"), re.compile(r"[A-Za-z]")


def word_pool(model) -> list[int]:
    """Token ids that are a space and letters (else single letters) and encode back to
    themselves alone, sorted."""
    tok = model.tokenizer
    ids = list(range(model.cfg.d_vocab))
    texts = tok.batch_decode([[i] for i in ids])
    for pattern in (_WORD, _LETTER):
        cand = [i for i, t in zip(ids, texts, strict=True) if pattern.fullmatch(t)]
        back = tok([texts[i] for i in cand], add_special_tokens=False)["input_ids"] if cand else []
        pool = [i for i, b in zip(cand, back, strict=True) if b == [i]]
        if len(pool) >= 4:
            return pool
    raise InputError("the vocabulary has no word or letter tokens to draw random sequences from")


@dataclass(frozen=True)
class Repeated:
    """``n`` sequences: ``first`` (a block of distinct tokens), ``second`` (the clean second
    block, a copy of ``first``) and ``fresh`` (the corrupted second block: distinct tokens none of
    which is in ``first``); ``[n, length]`` id arrays."""

    first: np.ndarray
    fresh: np.ndarray
    texts: tuple[str, ...]  # first + first, decoded
    corrupted_texts: tuple[str, ...]  # first + fresh, decoded

    @property
    def second(self) -> np.ndarray:
        return self.first

    @property
    def length(self) -> int:
        return int(self.first.shape[1])


def repeated_tokens(model, n: int, length: int, seed: int = 0) -> Repeated:
    """``n`` repeated-random-token sequences of blocks of ``length`` (see the module docstring),
    drawn from ``seed``; each text is checked to tokenize back to its ids."""
    pool = word_pool(model)
    if 2 * length > len(pool):
        raise InputError(f"blocks of {length} need {2 * length} distinct tokens; the pool has {len(pool)}")  # fmt: skip
    rng = random.Random(f"real-induction:{seed}")
    first, fresh = [], []
    for _ in range(n):
        drawn = rng.sample(pool, 2 * length)  # distinct: the fresh block shares no first token
        first.append(drawn[:length])
        fresh.append(drawn[length:])
    first, fresh = np.array(first), np.array(fresh)
    texts = tuple(_text(model, np.concatenate([f, f])) for f in first)
    corrupted = tuple(_text(model, np.concatenate([f, g])) for f, g in zip(first, fresh, strict=True))  # fmt: skip
    return Repeated(first, fresh, texts, corrupted)


def _text(model, ids: np.ndarray) -> str:
    text = model.tokenizer.decode(ids.tolist())
    back = model.to_tokens(text, prepend_bos=False, move_to_device=False)[0].tolist()
    if back != ids.tolist():
        raise InputError(f"a random sequence does not tokenize back to its ids: {text[:60]!r}")
    return text


def tokens(model, texts) -> torch.Tensor:
    """The texts as the detector tokenizes them (``model.to_tokens``: BOS when the model
    prepends one)."""
    return model.to_tokens(list(texts))


def as_task(rt: Repeated, seed: int = 0, name: str = "repeated_tokens") -> Task:
    """The sequences as a toolkit ``Task`` (plain format): the prompt is the first block and the
    copy's first ``p`` tokens (``p`` drawn in 2 .. length - 1), the answer the copy's next token;
    the corrupted prompt the first block and ``p`` fresh tokens, its answer the next fresh token
    (a token the corrupted context cannot predict; the logit difference is then the clean
    answer's advantage)."""
    if rt.length < 3:
        raise InputError(f"as_task needs blocks of at least 3 tokens, got {rt.length}")
    rng = random.Random(f"real-induction-cut:{seed}")
    out = []
    for i, (text, corr) in enumerate(zip(rt.texts, rt.corrupted_texts, strict=True)):
        p = rng.randrange(2, rt.length)
        words = _split(text, 2 * rt.length)
        corr_words = _split(corr, 2 * rt.length)
        out.append(Example(
            f"{name}{i}", name, "".join(words[: rt.length + p]), words[rt.length + p].strip(),
            corrupted_prompt="".join(corr_words[: rt.length + p]),
            corrupted_answer=corr_words[rt.length + p].strip(),
        ))  # fmt: skip
    return Task(name, out, source=f"real_induction:{seed}", meta={"fmt": "plain"})


def _split(text: str, n: int) -> list[str]:
    """A text of ``n`` word tokens (a space and letters each) as those ``n`` pieces."""
    words = re.findall(r" [A-Za-z]+", text)
    if "".join(words) != text or len(words) != n:
        raise InputError("as_task needs word tokens (a space and letters), not single letters")
    return words


def detector_scores(model, rt: Repeated) -> np.ndarray:
    """``[n_layers, n_heads]``: TransformerLens' induction-head detector, averaged over the
    clean sequences."""
    from transformer_lens.head_detector import detect_head

    with torch.no_grad():
        return detect_head(model, list(rt.texts), "induction_head").float().cpu().numpy()


def next_token_logprob(
    model, logits: torch.Tensor, toks: torch.Tensor, length: int
) -> torch.Tensor:
    """Mean log-prob of the clean next token at the second block's positions but its last: the
    copy's token ``j`` predicts token ``j + 1`` of the first block."""
    offset = toks.shape[1] - 2 * length  # a BOS, when the model prepends one
    pred = slice(offset + length, offset + 2 * length - 1)
    target = toks[:, offset + length + 1 : offset + 2 * length]
    logp = logits[:, pred].float().log_softmax(-1)
    return logp.gather(-1, target[..., None])[..., 0].mean()


def patching_effects(model, rt: Repeated) -> tuple[np.ndarray, float, float]:
    """``[n_layers, n_heads]`` normalised drop when each head's output is taken from the corrupted
    run into the clean one (TransformerLens' ``get_act_patch_attn_head_out_all_pos``), and the
    clean and corrupted runs' mean next-token log-prob."""
    from transformer_lens import patching

    clean, corrupted = tokens(model, rt.texts), tokens(model, rt.corrupted_texts)
    with torch.no_grad():
        m_clean = float(next_token_logprob(model, model(clean), clean, rt.length))
        _, corr_cache = model.run_with_cache(corrupted, names_filter=lambda n: n.endswith("hook_z"))
        # the correct tokens stay the clean ones: the corrupted run's log-prob of them
        m_corr = float(next_token_logprob(model, model(corrupted), clean, rt.length))
    gap = m_clean - m_corr
    if not gap > 0:
        raise InputError(f"the clean run predicts the copy no better than the corrupted run "
                         f"(log-prob {m_clean:.3f} vs {m_corr:.3f}): no induction to patch")  # fmt: skip

    def metric(logits):
        return (m_clean - next_token_logprob(model, logits, clean, rt.length)) / gap

    # TransformerLens patches its ``clean_cache`` into the run of ``corrupted_tokens``: here the
    # corrupted cache into the clean tokens (noising)
    with torch.no_grad():
        out = patching.get_act_patch_attn_head_out_all_pos(model, clean, corr_cache, metric)
    return out.float().cpu().numpy(), m_clean, m_corr


def heads_above(scores: np.ndarray, threshold: float) -> list[Head]:
    """The heads ``(layer, head)`` whose score reaches ``threshold``, by layer then head."""
    return [tuple(int(x) for x in ij) for ij in np.argwhere(np.asarray(scores) >= threshold)]


def agreed(a, b) -> list[Head]:
    """The heads in both ``a`` and ``b``, by layer then head."""
    return sorted(set(map(tuple, a)) & set(map(tuple, b)))


def hypergeom_p(overlap: int, n_total: int, n_truth: int, k: int) -> float:
    """``P(X >= overlap)`` for ``X`` the truth heads among ``k`` heads drawn at random without
    replacement from ``n_total`` of which ``n_truth`` are truth (1 at overlap 0)."""
    from scipy.stats import hypergeom

    return float(hypergeom.sf(overlap - 1, n_total, n_truth, k))


def default_topk(model, task: Task, k: int = K) -> tuple[str, list[Head]]:
    """The toolkit's default method on ``task`` and its top ``k`` heads."""
    from interp_heads.attribution.api import attribute_heads, default_method

    method = default_method(task)
    scores = attribute_heads(model, task, method, fmt="plain", batch_size=8)
    return method, scores.top(k)


def real_induction(model, *, n: int = 16, length: int = 20, seed: int = 0, k: int = K,
                   detector_threshold: float = DETECTOR_THRESHOLD,
                   patching_threshold: float = PATCHING_THRESHOLD) -> dict:  # fmt: skip
    """Everything of the module docstring on ``model``: a JSON-ready dict."""
    start = time.perf_counter()
    rt = repeated_tokens(model, n, length, seed)
    det = detector_scores(model, rt)
    t_det = time.perf_counter() - start
    eff, m_clean, m_corr = patching_effects(model, rt)
    t_patch = time.perf_counter() - start - t_det
    method, top = default_topk(model, as_task(rt, seed), k)
    det_heads = heads_above(det, detector_threshold)
    patch_heads = heads_above(eff, patching_threshold)
    truth = agreed(det_heads, patch_heads)
    n_total = model.cfg.n_layers * model.cfg.n_heads
    hits = [h for h in top if h in set(truth)]
    det_hits = [h for h in top if h in set(det_heads)]

    def labels(heads):
        return [head_label(*h) for h in heads]

    return {
        "n": n, "length": length, "seed": seed, "k": k, "n_heads": n_total,
        "detector_threshold": detector_threshold, "patching_threshold": patching_threshold,
        "clean_logprob": m_clean, "corrupted_logprob": m_corr,
        "detector_heads": labels(det_heads), "patching_heads": labels(patch_heads),
        "truth": labels(truth), "method": method, "topk": labels(top),
        "overlap": len(hits), "p": hypergeom_p(len(hits), n_total, len(truth), k),
        "overlap_detector": len(det_hits),
        "p_detector": hypergeom_p(len(det_hits), n_total, len(det_heads), k),
        "min_patching_effect": float(eff.min()),
        "detector_scores": det.round(4).tolist(), "patching_effects": eff.round(4).tolist(),
        "seconds": {"detector": t_det, "patching": t_patch,
                    "ranking": time.perf_counter() - start - t_det - t_patch,
                    "total": time.perf_counter() - start},
    }  # fmt: skip
