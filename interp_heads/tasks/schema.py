"""Task data model: one ``Example`` per JSONL row, a ``Task`` is a named list of them."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

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
        """Prompt format the task is meant for (``meta["fmt"]``; ``"auto"`` when unset)."""
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

    def split(self, n_first: int) -> tuple[Task, Task]:
        """Two disjoint tasks: the first ``n_first`` examples and the rest (e.g. rank vs evaluate)."""
        a, b = self.examples[:n_first], self.examples[n_first:]
        return (
            Task(self.name, list(a), self.source, self.sha256, dict(self.meta)),
            Task(self.name, list(b), self.source, self.sha256, dict(self.meta)),
        )
