"""Task data model: one ``Example`` per JSONL row, a ``Task`` is a named list of them."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from interp_heads.errors import InputError

BUILTIN_TASKS = ("retrieval", "knowledge_recall", "math_calculation", "inference")
# Further built-in tasks, not part of the Cognitive Mirrors figure's four panels.
EXTRA_TASKS = ("retrieval_keyed",)
TASK_TITLES = {
    "retrieval": "Retrieval",
    "knowledge_recall": "Knowledge Recall",
    "math_calculation": "Math Calculation",
    "inference": "Inference",
    "retrieval_keyed": "Keyed Retrieval",
}


@dataclass(frozen=True)
class Example:
    """One task item.

    Attributes:
        id: unique within the task.
        task: task name.
        prompt: the task text; what the model sees is ``interp_heads.tasks.prompts.render(model, prompt)``.
        question: the plain question (COMET's source).
        answer: the reference answer.
        aliases: other accepted answers.
        corrupted_prompt: same template and token length, a different correct answer (for patching).
        corrupted_answer: the answer to ``corrupted_prompt``.
        distractors: wrong candidates the prompt contains (e.g. the other person of a comparison,
            the other needles' values); an answer that names one of them is wrong.
        meta: free per-row facts (e.g. ``{"context_tokens": 120, "depth": 0.5}`` for retrieval),
            used for breakdowns in the report, never for scoring.
    """

    id: str
    task: str
    prompt: str
    answer: str
    question: str = ""
    aliases: tuple[str, ...] = ()
    corrupted_prompt: str | None = None
    corrupted_answer: str | None = None
    distractors: tuple[str, ...] = ()
    meta: dict = field(default_factory=dict, compare=False, hash=False)

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["aliases"] = list(self.aliases)
        d["distractors"] = list(self.distractors)
        return d


_NOT_COLS = ("task", "meta")  # the task's name is the frame's own column; meta is spread out


@dataclass
class Task:
    """A named, ordered list of examples plus where they came from."""

    name: str
    examples: list[Example]
    source: str = ""
    sha256: str = ""
    meta: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.examples)

    def __iter__(self) -> Iterator[Example]:
        return iter(self.examples)

    def __getitem__(self, i):
        return self.examples[i]

    def __repr__(self) -> str:
        ids = [e.id for e in self.examples[:3]]
        more = ", ..." if len(self.examples) > 3 else ""
        shown = ", ".join(repr(i) for i in ids)
        return (
            f"Task({self.name!r}, {len(self)} examples, fmt={self.fmt!r}, "
            f"corrupted={self.has_corrupted}, ids=[{shown}{more}])"
        )

    def to_frame(self):
        """Tidy ``pandas.DataFrame``, one row per example: task, id, prompt, answer, question,
        aliases, corrupted prompt and answer, distractors, then each ``meta`` key as a column
        (``meta_<key>`` where a key is also a field's name)."""
        import pandas as pd

        fields = ["task", *(f.name for f in dataclasses.fields(Example) if f.name not in _NOT_COLS)]
        rows = []
        for e in self.examples:
            row = {
                "task": self.name,
                **{k: v for k, v in e.to_dict().items() if k not in _NOT_COLS},
            }
            row.update({(f"meta_{k}" if k in row else k): v for k, v in e.meta.items()})
            rows.append(row)
        return pd.DataFrame(rows, columns=None if rows else fields)

    @property
    def title(self) -> str:
        return TASK_TITLES.get(self.name, self.name)

    @property
    def fmt(self) -> str:
        """Prompt format the task is meant for (``meta["fmt"]``); ``"auto"`` while unset: a file
        that declares none gets it measured by the first call that takes it with a model."""
        return self.meta.get("fmt", "auto")

    @property
    def has_corrupted(self) -> bool:
        return all(e.corrupted_prompt and e.corrupted_answer for e in self.examples)

    def subset(self, ids: Sequence[str] | None = None, n: int | None = None) -> Task:
        """Examples with these ids (in task order), and/or the first ``n``."""
        exs = self.examples
        if ids is not None:
            keep = set(ids)
            exs = [e for e in exs if e.id in keep]
        if n is not None:
            exs = exs[:n]
        return Task(self.name, list(exs), self.source, self.sha256, dict(self.meta))

    def split(self, n_first: int, *, allow_empty: bool = False) -> tuple[Task, Task]:
        """Two disjoint tasks: the first ``n_first`` examples and the rest (e.g. rank vs evaluate).

        A split that leaves either part empty is refused (``ValueError`` saying how many
        examples there are) unless ``allow_empty``: ranking or evaluating nothing is never meant.
        """
        if isinstance(n_first, bool) or not isinstance(n_first, int):
            raise InputError(f"split: n_first must be an integer, got {n_first!r}")
        if not allow_empty and not 0 < n_first < len(self):
            raise InputError(
                f"task {self.name!r} has {len(self)} example(s){filter_note(self)}: split"
                f"({n_first}) would leave {'the first' if n_first < 1 else 'the second'} part "
                f"empty; split at 1 to {len(self) - 1}"
                + ("" if len(self) > 1 else " (it needs at least 2 examples)")
            )
        a, b = self.examples[:n_first], self.examples[n_first:]
        return (
            Task(self.name, list(a), self.source, self.sha256, dict(self.meta)),
            Task(self.name, list(b), self.source, self.sha256, dict(self.meta)),
        )


def filter_note(task: Task) -> str:
    """What ``filter_correct`` or ``take_correct`` left of ``task``, for an error about too few
    examples: `` (filter_correct kept 0 of 40 in prompt format 'chat')``; empty when unfiltered."""
    info = task.meta.get("filter") or {}
    n_before = info.get("n_before", info.get("n_evaluated"))
    if n_before is None:
        return ""
    return f" (filter_correct kept {len(task)} of {n_before} in prompt format {info.get('fmt')!r})"
