"""CogQA files, the Cognitive Mirrors study's data format: one task per cognitive skill.

A CogQA file (the study's ``dataset/balanced_cot_test_data.json``) is a JSON list of items
``{"question": ..., "answer": ..., "generated": [{"subquestion", "answer", "cognitive_skill"},
...]}``: a main question split into sub-questions, each labelled with the skill it needs
(Retrieval, Knowledge Recall, Semantic Understanding, Syntactic Understanding, Math Calculation,
Induction, Inference, Logical Reasoning, Decision-making, or any other name). A sub-question's
answer may be a number. Every sub-question becomes one example of the task ``cogqa/<skill>``,
its prompt built as the study's ``cot_prompt`` builds it (``tasks.cognitive_mirrors``: the
earlier Retrieval sub-questions and answers as prior knowledge) and its gold answer the
sub-question's answer as text (``str``, as the study scores it). The tasks are in the study's
skill order, then other skills in order of appearance; examples in file order, with ids
``<item>-<sub-question>`` (from 0).

A task spec ``FILE.json`` names all of a file's skills; ``FILE.json:Retrieval`` names one.
A spec ending ``@plain`` (``FILE.json@plain``, ``FILE.json:Retrieval@plain``) reads the same
sub-questions as plain completion prompts (:func:`plain_prompt`: the main question, the same prior
knowledge, ``Q: <sub-question>`` and ``A:``), in the format ``plain``: the causal protocol's prompt
on the study's data, so that the two protocols can be compared on one file. A task has the same
name in both forms; its ``source`` keeps the form (``FILE.json@plain``).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from interp_heads.tasks.checking import normalize
from interp_heads.tasks.cognitive_mirrors import NO_PRIOR, prior_knowledge, study_prompt
from interp_heads.tasks.io import TaskFormatError, shown
from interp_heads.tasks.schema import Example, Task

PREFIX = "cogqa"
PLAIN = "@plain"  # a spec's suffix: the plain completion form
SKILLS = (
    "Retrieval",
    "Knowledge Recall",
    "Semantic Understanding",
    "Syntactic Understanding",
    "Math Calculation",
    "Induction",
    "Inference",
    "Logical Reasoning",
    "Decision-making",
)  # fmt: skip  (the study's functions_names, in its order)


def is_cogqa(spec: str | os.PathLike) -> bool:
    """Whether a task spec names a CogQA file (``.json``, optionally ``:<skill>``, ``@plain``)."""
    path, _ = split_spec(spec)
    return path.suffix.lower() == ".json"


def split_spec(spec: str | os.PathLike) -> tuple[Path, str | None]:
    """``FILE.json:Skill`` -> ``(FILE.json, "Skill")``; anything else -> ``(path, None)``; a
    ``@plain`` suffix is dropped (:func:`spec_form` reads it)."""
    text, _ = spec_form(spec)
    head, sep, skill = text.rpartition(".json:")
    if sep and skill and not Path(text).exists():
        return Path(head + ".json"), skill
    return Path(text), None


def spec_form(spec: str | os.PathLike) -> tuple[str, str]:
    """``(spec without its form suffix, form)``: form ``plain`` for a ``@plain`` suffix, else
    ``study`` (a file whose own name ends ``@plain`` is read as it is)."""
    text = str(spec)
    if text.endswith(PLAIN) and not Path(text).exists():
        return text[: -len(PLAIN)], "plain"
    return text, "study"


def plain_prompt(question: str, cot: str, subquestion: str) -> str:
    """A sub-question as a plain completion prompt: the main question, the study's prior
    knowledge when there is any (``Qk: ...`` / ``Ak: ...``), then ``Q: <sub-question>`` and
    ``A:``, the question-answer shape of the built-in ``inference`` task."""
    lines = [question.strip()]
    if cot.strip() and cot.strip() != NO_PRIOR:
        lines.append(cot.strip())
    lines.append(f"Q: {subquestion.strip()}\nA:")
    return "\n".join(lines)


class Form(NamedTuple):
    """How a CogQA file's sub-questions are read in one form: the prompt builder, the answer
    format the tasks declare, and the suffix their ``source`` carries."""

    prompt: Callable[[str, str, str], str]
    fmt: str
    suffix: str


FORMS = {
    "study": Form(study_prompt, "cognitive_mirrors", ""),
    "plain": Form(plain_prompt, "plain", PLAIN),
}


def task_name(skill: str) -> str:
    return f"{PREFIX}/{skill}"


def _items(path: Path) -> tuple[list, bytes]:
    where = shown(path.name)
    if not path.is_file():
        raise TaskFormatError(f"{where}: no such file ({shown(path)})")
    raw = path.read_bytes()
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as e:
        raise TaskFormatError(f"{where}: not valid UTF-8 (byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise TaskFormatError(f"{where}:{e.lineno}: invalid JSON ({e.msg})") from None
    if not isinstance(data, list) or not data:
        raise TaskFormatError(
            f"{where}:1: a CogQA file is a non-empty JSON list of items with 'question' and "
            "'generated'"
        )
    return data, raw


def _checked_sub(sub: object, where: str) -> tuple[str, str, str]:
    """``(subquestion, answer as text, skill)`` of one sub-question, or ``TaskFormatError``."""
    if not isinstance(sub, dict):
        raise TaskFormatError(f"{where}: expected a JSON object, got {type(sub).__name__}")
    for key in ("subquestion", "cognitive_skill"):
        if not isinstance(sub.get(key), str) or not sub[key].strip():
            raise TaskFormatError(f"{where}: field {key!r} must be a non-empty string")
    answer = sub.get("answer")
    if isinstance(answer, bool) or not isinstance(answer, str | int | float):
        raise TaskFormatError(f"{where}: field 'answer' must be a string or a number")
    if not normalize(str(answer), keep_articles=True):
        raise TaskFormatError(f"{where}: answer {answer!r} has no letter or digit")
    return sub["subquestion"], str(answer), sub["cognitive_skill"]


def _examples(items: list, where: str, form: str = "study") -> dict[str, list[Example]]:
    """Every sub-question as an example in ``form`` (``study``: the study's template; ``plain``:
    :func:`plain_prompt`), grouped by skill (in order of appearance)."""
    prompt_of = FORMS[form].prompt
    by_skill: dict[str, list[Example]] = {}
    for i, item in enumerate(items):
        at = f"{where}:item {i}"
        if not isinstance(item, dict) or not isinstance(item.get("question"), str):
            raise TaskFormatError(f"{at}: expected an object with a string 'question'")
        subs = item.get("generated")
        if not isinstance(subs, list) or not subs:
            raise TaskFormatError(f"{at}: field 'generated' must be a non-empty list")
        checked = [_checked_sub(s, f"{at}, sub-question {j}") for j, s in enumerate(subs)]
        for j, (subq, answer, skill) in enumerate(checked):
            cot = prior_knowledge(checked[:j], first=j == 0)
            by_skill.setdefault(skill, []).append(
                Example(
                    id=f"{i}-{j}",
                    task=task_name(skill),
                    prompt=prompt_of(item["question"], cot, subq),
                    answer=answer,
                    question=subq,
                    meta={"item": i, "sub": j, "skill": skill},
                )
            )
    return by_skill


def read_cogqa(spec: str | os.PathLike) -> list[Task]:
    """The tasks of a CogQA file, one per skill (``FILE.json:Skill``: that skill's only), in the
    study's template, or as plain completion prompts for a spec ending ``@plain``.

    Raises:
        TaskFormatError: the file is missing or not in the format, or the skill is not in it.
    """
    path, only = split_spec(spec)
    form = spec_form(spec)[1]
    items, raw = _items(path)
    by_skill = _examples(items, path.name, form)
    if only is not None and only not in by_skill:
        raise TaskFormatError(
            f"{path.name}: no sub-question has the skill {only!r} (skills: "
            f"{', '.join(_ordered(by_skill))})"
        )
    sha = hashlib.sha256(raw).hexdigest()
    meta = {"fmt": FORMS[form].fmt, "fmt_source": "file"}
    source = str(path) + FORMS[form].suffix
    return [
        Task(task_name(skill), by_skill[skill], source, sha, {**meta, "skill": skill})
        for skill in _ordered(by_skill)
        if only is None or skill == only
    ]


def _ordered(by_skill: dict) -> list[str]:
    """The study's skills in its order, then the others in order of appearance."""
    return [s for s in SKILLS if s in by_skill] + [s for s in by_skill if s not in SKILLS]


def describe(spec: str | os.PathLike) -> list[str]:
    """Lines for ``interp-heads tasks show FILE.json``: each skill, its count and task name."""
    tasks = read_cogqa(spec)
    path, _ = split_spec(spec)
    n_items = len({e.meta["item"] for t in tasks for e in t})
    lines = [
        f"{path.name}: CogQA format, {n_items} questions, {sum(len(t) for t in tasks)} "
        f"sub-questions, {len(tasks)} cognitive skills"
    ]
    width = max(len(t.meta["skill"]) for t in tasks)
    lines += [f"  {t.meta['skill']:<{width}}  {len(t):>5}  (task {t.name})" for t in tasks]
    return lines
