"""BLEU and ROUGE-1 exactly as Hugging Face ``evaluate`` computes them, offline.

``evaluate.load("bleu")`` and ``evaluate.load("rouge")`` fetch their scripts from a hub at run
time, so this toolkit computes the same formulas itself:

- **BLEU** (``evaluate``'s ``bleu``: the ``compute_bleu`` of ``tensorflow/nmt``'s
  ``scripts/bleu.py`` on the ``13a`` tokenizer of ``sacrebleu``, with its defaults ``max_order=4,
  smooth=False``): corpus BLEU, the geometric mean of the clipped 1..4-gram precisions (0 when any
  of them is 0: no smoothing, so a text under 4 tokens scores 0) times the brevity penalty
  ``exp(1 - r/c)`` when the candidate length ``c`` is at most the reference length ``r``. An
  empty candidate or reference divides by zero there; here it scores 0.
- **ROUGE-1** (``evaluate``'s ``rouge``, which calls Google's ``rouge_score`` with its defaults: no
  stemmer, its default tokenizer): lower case, every run of characters other than ``a-z0-9``
  is a separator, then the F-measure of the unigram overlap
  ``2 P R / (P + R)`` with ``P = overlap / candidate tokens``, ``R = overlap / reference tokens``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

_13A = (
    (re.compile(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])"), r" \1 "),  # symbols (Western languages)
    (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),  # period and comma unless after a digit
    (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),  # ... unless before a digit
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),  # a dash after a digit
)
_NON_ALNUM = re.compile(r"[^a-z0-9]+")


def tokenize_13a(line: str) -> list[str]:
    """``sacrebleu``'s ``13a`` tokenizer (mteval-v13a, as ``evaluate``'s BLEU copies it)."""
    line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in line:
        for entity, char in (("&quot;", '"'), ("&amp;", "&"), ("&lt;", "<"), ("&gt;", ">")):
            line = line.replace(entity, char)
    line = f" {line} "
    for pattern, repl in _13A:
        line = pattern.sub(repl, line)
    return line.split()


def _ngrams(tokens: Sequence[str], max_order: int) -> Counter:
    return Counter(
        tuple(tokens[i : i + n])
        for n in range(1, max_order + 1)
        for i in range(len(tokens) - n + 1)
    )


def corpus_bleu(candidates: Sequence[str], references: Sequence[str], max_order: int = 4) -> float:
    """Corpus BLEU in [0, 1] of ``candidates`` against one reference each, unsmoothed."""
    matches, possible = [0] * max_order, [0] * max_order
    c_len = r_len = 0
    for cand, ref in zip(candidates, references, strict=True):
        c, r = tokenize_13a(cand), tokenize_13a(ref)
        c_len, r_len = c_len + len(c), r_len + len(r)
        for gram, count in (_ngrams(c, max_order) & _ngrams(r, max_order)).items():
            matches[len(gram) - 1] += count
        for n in range(1, max_order + 1):
            possible[n - 1] += max(len(c) - n + 1, 0)
    precisions = [m / p if p > 0 else 0.0 for m, p in zip(matches, possible, strict=True)]
    if min(precisions) <= 0 or c_len == 0 or r_len == 0:
        return 0.0
    geo_mean = math.exp(sum(math.log(p) for p in precisions) / max_order)
    ratio = c_len / r_len
    return geo_mean * (1.0 if ratio > 1.0 else math.exp(1.0 - 1.0 / ratio))


def tokenize_rouge(text: str) -> list[str]:
    """``rouge_score``'s default tokenizer without stemming: lower-cased ``[a-z0-9]+`` runs."""
    return [t for t in _NON_ALNUM.sub(" ", text.lower()).split() if t]


def rouge1(candidate: str, reference: str) -> float:
    """ROUGE-1 F-measure of ``candidate`` against ``reference`` (0 when either has no token)."""
    c, r = Counter(tokenize_rouge(candidate)), Counter(tokenize_rouge(reference))
    overlap = sum((c & r).values())
    precision = overlap / max(sum(c.values()), 1)
    recall = overlap / max(sum(r.values()), 1)
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
