"""Answer checking: does a model's generation give the reference answer?

The rule (used by baselines, ablation scoring and every report):

1. Only the first non-empty line of the generation counts (models often ramble on afterwards).
2. Both that line and the answer are normalised by :func:`normalize`: Unicode NFKC, lower case,
   thousands separators dropped (``1,000`` -> ``1000``), number words turned into digits
   (``twelve`` -> ``12``, ``twenty-one`` -> ``21``, ``one hundred and five`` -> ``105``),
   punctuation turned into spaces (kept: a decimal point or leading minus sign of a number, a
   ``/`` between digits as in ``1/2``, and ``+``/``#`` ending a word as in ``C++`` or ``C#``, so
   ``"1/2"`` never counts for ``"2"`` nor ``"C++"`` for ``"C"``), the articles ``a``/``an``/``the``
   dropped, whitespace collapsed.
3. The generation is correct when the normalised answer (or an alias) equals the normalised line,
   or appears in it as a whole run of words: ``"The capital of France is Paris."`` counts for
   ``"Paris"``, but ``"120"`` never counts for ``"12"`` nor ``"12"`` for ``"120"``.

4. Distractor-aware: when the example lists ``distractors`` (wrong candidates the prompt itself
   contains), a line that names any of them as a whole run of words is wrong, even if it also
   names the answer ("radio and bread" is not an answer to "what does Alex have?").

5. An answer that is itself an article (``"A"``, the first option of a multiple-choice task) keeps
   its articles: it is correct when the line is that letter, or starts with it as an option
   (``"A"``, ``"(A)"``, ``"A)"``, ``"A."``, ``"A: ..."``) or says ``"answer is A"``; ``"a cat"`` is
   not ``"A"``.

An empty generation or an answer that normalises to nothing even with its articles kept
(``"..."``, a zero-width space) is never correct; task files refuse such answers.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

_UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19,
}  # fmt: skip
_TENS = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
    "eighty": 80, "ninety": 90,
}  # fmt: skip
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
_NUMBER_WORDS = set(_UNITS) | set(_TENS) | set(_SCALES)
_ARTICLES = {"a", "an", "the"}

_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
# Punctuation that is part of a token: "1/2" (a fraction), "c++" / "c#" (a name).
_KEPT = re.compile(r"(?<=\d)/(?=\d)|(?<=[^\W\d_])[+#]+(?!\w)")
_MARK = {"/": "\u01c2s", "+": "\u01c2p", "#": "\u01c2h"}  # letters (\w), so _PUNCT keeps them
# Anything that is not a letter/digit, except a '.' between digits or a '-' before a digit that
# starts a word (negative numbers).
_PUNCT = re.compile(r"(?:(?<!\d)\.|\.(?!\d)|(?<=\w)-|-(?!\d)|[^\w\s.\-])+")


def _words_to_number(words: list[str]) -> int:
    total, current = 0, 0
    for w in words:
        if w in _UNITS:
            current += _UNITS[w]
        elif w in _TENS:
            current += _TENS[w]
        elif w == "hundred":
            current = max(current, 1) * 100
        else:  # thousand, million
            total += max(current, 1) * _SCALES[w]
            current = 0
    return total + current


def _may_follow(prev: str, word: str) -> bool:
    """Number-word grammar: "twenty one", "one hundred", but not "one two" (two numbers)."""
    if word in _SCALES:
        return prev not in _SCALES or _SCALES[prev] < _SCALES[word]
    if prev in _TENS:
        return word in _UNITS and 0 < _UNITS[word] < 10
    return prev in _SCALES


def _numberize(tokens: list[str]) -> list[str]:
    """Replace maximal runs of number words (``and`` allowed inside) by their digits."""
    out: list[str] = []
    i = 0
    while i < len(tokens):
        if tokens[i] not in _NUMBER_WORDS or tokens[i] in _SCALES:
            out.append(tokens[i])
            i += 1
            continue
        run = [tokens[i]]
        j = i + 1
        while j < len(tokens):
            if tokens[j] in _NUMBER_WORDS and _may_follow(run[-1], tokens[j]):
                run.append(tokens[j])
                j += 1
            elif (
                tokens[j] == "and"
                and run[-1] in _SCALES
                and j + 1 < len(tokens)
                and tokens[j + 1] in _NUMBER_WORDS
            ):
                j += 1
            else:
                break
        out.append(str(_words_to_number(run)))
        i = j
    return out


def normalize(text: str, keep_articles: bool = False) -> str:
    """Canonical form of an answer or generation line (see the module docstring)."""
    text = unicodedata.normalize("NFKC", text or "").lower()
    text = text.replace("\u2212", "-")
    text = _THOUSANDS.sub("", text)
    text = _KEPT.sub(lambda m: "".join(_MARK[c] for c in m.group()), text)
    text = _PUNCT.sub(" ", text)
    for char, mark in _MARK.items():
        text = text.replace(mark, char)
    tokens = [t for t in text.split() if keep_articles or t not in _ARTICLES]
    return " ".join(_numberize(tokens))


def _gives_article_answer(generation: str, target: str) -> bool:
    """Whether the first line gives ``target`` (an article such as the option letter "a")."""
    line = normalize(first_line(generation), keep_articles=True)
    if line == target:
        return True
    raw = unicodedata.normalize("NFKC", first_line(generation)).lower()
    t = re.escape(target)
    option = rf"^[(\[]?{t}(?:[).:\]]|\s*$)"
    said = rf"\banswer(?: is)?:?\s*[(\[]?{t}(?:[).:\]]|\s|$)"
    return bool(re.match(option, raw) or re.search(said, raw))


def first_line(generation: str) -> str:
    """The first line of ``generation`` that is not blank (``""`` when there is none)."""
    for line in (generation or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


def _contains_words(haystack: str, needle: str) -> bool:
    return f" {needle} " in f" {haystack} "


def names_distractor(generation: str, distractors: Sequence[str], answer: str = "") -> bool:
    """Whether the first line of ``generation`` names a distractor (one that is not the answer)."""
    line = normalize(first_line(generation))
    target = normalize(answer)
    for d in distractors:
        nd = normalize(d)
        if nd and nd != target and not _contains_words(target, nd) and _contains_words(line, nd):
            return True
    return False


def is_correct(
    generation: str, answer: str, aliases: Sequence[str] = (), distractors: Sequence[str] = ()
) -> bool:
    """Whether the first non-empty line of ``generation`` gives ``answer`` (or an alias) and no
    distractor."""
    line = normalize(first_line(generation))
    if not line and not normalize(first_line(generation), keep_articles=True):
        return False
    if distractors and names_distractor(generation, distractors, answer):
        return False
    for ref in (answer, *aliases):
        target = normalize(ref)
        if target and (line == target or _contains_words(line, target)):
            return True
        if not target and (kept := normalize(ref, keep_articles=True)):
            if _gives_article_answer(generation, kept):
                return True
    return False
