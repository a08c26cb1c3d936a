"""Greedy answers of the unmasked model in a given prompt format, and their correctness.

The one place that generates and checks a task's answers: ``tasks.baseline`` (which resolves the
task's format first) and ``tasks.prompt_format`` (which measures the formats against each other)
both call :func:`evaluate_in_format`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from interp_heads.generation.decode import generate
from interp_heads.tasks import cognitive_mirrors
from interp_heads.tasks.checking import is_correct
from interp_heads.tasks.prompts import PromptFormat, render
from interp_heads.tasks.schema import Task

log = logging.getLogger(__name__)

DEFAULT_MAX_NEW_TOKENS = 5


@dataclass
class BaselineResult:
    """Greedy generations of the unablated model on a task, and their correctness."""

    task: str
    ids: list[str]
    generations: list[str]
    correct: list[bool]
    fmt: str = "auto"
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS
    corrupted_generations: list[str] | None = None
    corrupted_correct: list[bool] | None = None
    meta: dict = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.ids)

    @property
    def accuracy(self) -> float:
        return sum(self.correct) / self.n if self.n else 0.0

    def figure(self):
        """The unmasked model's answers on the task: correct and wrong, counted (Plotly)."""
        import plotly.graph_objects as go

        wrong = self.n - sum(self.correct)
        fig = go.Figure(go.Bar(x=["correct", "wrong"], y=[sum(self.correct), wrong]))
        return fig.update_layout(
            title=f"{self.task}: accuracy {self.accuracy:.2f} on {self.n} examples "
            f"(prompt format {self.fmt}, {self.max_new_tokens} new tokens)",
            yaxis_title="examples",
            width=520,
            height=360,
        )

    def to_frame(self):
        """One row per example (``pandas.DataFrame``)."""
        import pandas as pd

        d = {"id": self.ids, "generation": self.generations, "correct": self.correct}
        if self.corrupted_correct is not None:
            d["corrupted_generation"] = self.corrupted_generations
            d["corrupted_correct"] = self.corrupted_correct
        frame = pd.DataFrame(d)
        frame.insert(0, "task", self.task)
        return frame


def evaluate_in_format(
    model,
    task: Task,
    fmt: PromptFormat | str,
    *,
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
    batch_size: int = 32,
    batch_padding: int | None = None,
    corrupted: bool = False,
    progress: bool = False,
) -> BaselineResult:
    """Greedy generations and correctness (``is_correct``) on every example of ``task``, its
    prompts rendered in ``fmt`` (``tasks.baseline.evaluate_baseline`` resolves the task's own).
    With ``corrupted=True`` the corrupted prompts (when the task has them) are scored too,
    against ``corrupted_answer``. In the ``cognitive_mirrors`` format generation stops after
    ``]`` and the answer checked is the one extracted from the JSON block. ``progress`` shows a
    bar over the prompts; ``batch_padding`` cuts batches as ``generate``'s does.
    """
    exs = task.examples
    json_answers = fmt == PromptFormat.COGNITIVE_MIRRORS
    opts = {"stop_after": cognitive_mirrors.STOP_TOKEN} if json_answers else {}
    checked = cognitive_mirrors.answer_text if json_answers else str

    def answers(prompts: list[str]) -> list[str]:
        rendered = render(model, prompts, fmt=fmt)
        return generate(model, rendered, max_new_tokens, batch_size=batch_size, **opts,
                        batch_padding=batch_padding, progress=progress)  # fmt: skip

    gens = answers([e.prompt for e in exs])
    result = BaselineResult(
        task=task.name,
        ids=[e.id for e in exs],
        generations=gens,
        correct=[
            is_correct(checked(g), e.answer, e.aliases, e.distractors)
            for g, e in zip(gens, exs, strict=True)
        ],
        fmt=fmt,
        max_new_tokens=max_new_tokens,
    )
    if corrupted and task.has_corrupted:
        cgens = answers([e.corrupted_prompt for e in exs])
        result.corrupted_generations = cgens
        result.corrupted_correct = [
            is_correct(checked(g), e.corrupted_answer) for g, e in zip(cgens, exs, strict=True)
        ]
    log.info("baseline %s: accuracy %.3f on %d examples", task.name, result.accuracy, result.n)
    return result
