"""The Cognitive Mirrors prompt format: the study's template and its JSON answer extraction.

Ma et al. (NeurIPS 2025; code ``sihuo-design/CognitiveMirrors``, ``utils.py``) ask every
sub-question in one fixed template: a system role, the main question, "prior knowledge" (the
earlier *Retrieval* sub-questions of the same item with their answers, ``Qk: ...`` / ``Ak: ...``,
or ``No prior knowledge.`` for an item's first sub-question), the sub-question, instructions, and
the answer asked as a JSON block ``[{"answer": "..."}]``. Generation stops at the token ``]``
(up to 128 new tokens). The answer is the ``"answer"`` of the *last* such block, after a repair
that quotes unquoted values (``safe_json_parse``). The study runs its regular expression over the
decoded prompt *and* generation, so a generation without any block yields the template's own
placeholder ``<Your answer here>``; only a block that does not parse yields no answer. When the
masked or the unmasked answer is missing, both fall back to the whole decoded generations
(``simi_scoring``). Prompts are the raw template (no chat template), as the study feeds them.

``render(model, prompts, fmt="cognitive_mirrors")`` (``tasks.prompts``) keeps a prompt that is
already in the template and wraps any other task text with :func:`wrap`, so the format is usable
for any task; ``tasks.cogqa`` and ``tasks.cm_builder`` write tasks whose prompts are the template.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

SYSTEM_ROLE = (
    "\nYou are an expert in analytical and logical reasoning. You will be given a main question "
    "and prior knowledge in chain-of-thought (CoT) format.\nYour task is to answer a follow-up "
    "subquestion using the information provided.\n"
)
TEMPLATE = (
    "\n{system_role}\nHere is the main question:\n<main_question>\n{question}\n</main_question>\n\n"
    "Here is the prior knowledge in chain-of-thought (CoT) format:\n<prior_knowledge>\n{cot}\n"
    "</prior_knowledge>\n\nHere is the subquestion:\n<subquestion>\n{subquestion}\n"
    "</subquestion>\n\nInstructions:\n- Answer the subquestion carefully.\n- You can use the "
    "information in the prior_knowledge to help you answer the subquestion.\n- Your response "
    "should be clear and concise.\n- Stick to factual reasoning based on provided CoT.\n- Do not "
    "include any explanation, commentary, or code.\n- Do not output anything after the closing "
    'square bracket `]`.\n\nOnly output your final answer using this format:\n[\n    {{"answer": '
    '"<Your answer here>"}}\n]\n\nYour answer:\n'
)
NO_PRIOR = "No prior knowledge."
PLACEHOLDER = "<Your answer here>"  # the template block's answer: found when a generation has none
STOP_TOKEN = "]"  # generation ends after this vocabulary token (the study's StopOnCloseBracket)
MAX_NEW_TOKENS = 128  # the study's generation length
RETRIEVAL = "Retrieval"  # the one skill whose sub-questions become prior knowledge
_HEAD = "\n" + SYSTEM_ROLE + "\nHere is the main question:\n<main_question>\n"
_BLOCK = re.compile(r"\[\s*{[^}]+}\s*\]")
_UNQUOTED = re.compile(r'("answer": )(.+?)(?=\s*})')


def prior_knowledge(earlier: Sequence[tuple[str, object, str]], first: bool) -> str:
    """The study's CoT for a sub-question: earlier Retrieval ``(subquestion, answer, skill)`` as
    ``Qk: ...\\nAk: ...`` (``k``: the position among all earlier sub-questions, from 1), or
    ``No prior knowledge.`` for an item's first sub-question; stripped."""
    if first:
        return NO_PRIOR
    cot = ""
    for k, (question, answer, skill) in enumerate(earlier):
        if skill == RETRIEVAL:
            cot += f"Q{k + 1}: {question}\nA{k + 1}: {answer}\n"
    return cot.strip()


def study_prompt(question: str, cot: str, subquestion: str) -> str:
    """The study's prompt for one sub-question (``cot`` as :func:`prior_knowledge` gives it)."""
    return TEMPLATE.format(
        system_role=SYSTEM_ROLE, question=question, cot=cot.strip(), subquestion=subquestion
    )


def is_study_prompt(text: str) -> bool:
    """Whether ``text`` is already a prompt in the study's template (starts with its head)."""
    return text.startswith(_HEAD)


def wrap(text: str) -> str:
    """Any task text in the template: main question and sub-question both ``text``, no prior
    knowledge; a text already in the template is returned unchanged."""
    return text if is_study_prompt(text) else study_prompt(text, NO_PRIOR, text)


def safe_json_parse(block: str):
    """``json.loads`` after the study's repair: an ``"answer": `` value not wrapped in double quotes
    (up to the closing brace) is wrapped in them. Raises ``ValueError`` when it still fails."""

    def quote(match: re.Match) -> str:
        key, value = match.group(1), match.group(2).strip()
        if value.startswith('"') and value.endswith('"'):
            return f"{key}{value}"
        return f'{key}"{value}"'

    return json.loads(_UNQUOTED.sub(quote, block))


def extract_answer(generation: str) -> str | None:
    """The answer the study extracts from a generation (its prompt's block included).

    The ``"answer"`` of the last ``[ {...} ]`` block, as a string; the template's placeholder
    when the generation holds no block (the study's search also sees the prompt's block); None
    when the last block does not parse or is not ``[{"answer": ...}]``.
    """
    matches = _BLOCK.findall(generation)
    if not matches:
        return PLACEHOLDER
    try:
        parsed = safe_json_parse(matches[-1].strip())
    except ValueError:
        return None
    if isinstance(parsed, list) and isinstance(parsed[0], dict) and "answer" in parsed[0]:
        return str(parsed[0]["answer"])
    return None


def study_answers(masked: str, unmasked: str) -> tuple[str, str]:
    """``(masked answer, unmasked answer)`` as the study scores them: both extracted, or both the
    whole generations when either has no answer; an empty answer becomes ``N/A``."""
    a, b = extract_answer(masked), extract_answer(unmasked)
    if a is None or b is None:
        a, b = masked, unmasked
    return (a if a.strip() else "N/A"), (b if b.strip() else "N/A")


def answer_text(generation: str) -> str:
    """One generation's extracted answer, else the whole generation (answer checks of baselines)."""
    answer = extract_answer(generation)
    return generation if answer is None or answer == PLACEHOLDER else answer
