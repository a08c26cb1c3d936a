"""Which choices a claim survives: a user's TopK-vs-RandomK claim over interventions, scopes and
metrics (docs/<name>.md, from ``interp-heads study claim --param task=... --param ranking=...``).

The claim is the one the toolkit makes by default: masking the ranking's top k heads collapses
the task against masking k random heads (``sweep.verdict.collapse``), under mean
ablation at every position, scored by accuracy (:data:`END`). Each cell changes one choice:
the intervention (zero, resample, the Cognitive Mirrors x1e-4 scale), the scope (the last
position of each pass; every generated position with the prompt unmasked) or the metric (the
answer's log-prob and, when the task has distractors, the logit difference against them: one
teacher-forced pass, so they are read at every position). One run per intervention and scope;
a metric is read from the stored records of the run at every position. The ranking is the
user's (a run folder of ``interp-heads attribute`` or ``run``), given to every run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from annotated_types import Interval

from interp_heads.studies.base import STUDIES, Study, StudyRun
from interp_heads.studies.spec_curve import cells, curve_frame, run_name

OPTIONS = {
    "intervention": {
        "mean": {"ablation": "mean"},
        "zero": {"ablation": "zero"},
        "resample": {"ablation": "resample"},
        "scale": {"ablation": "scale", "scale_factor": 1e-4},
    },
    "scope": {
        "all": {"positions": "all"},
        "last": {"positions": "last"},
        "generated": {"positions": "generated"},
    },
    "metric": {
        "accuracy": {"metric": "accuracy"},
        "answer_logprob": {"metric": "answer_logprob"},
        "logit_diff": {"metric": "logit_diff"},
    },
}
END = {"intervention": "mean", "scope": "all", "metric": "accuracy"}
LOGIT = ("answer_logprob", "logit_diff")  # need every position (one teacher-forced pass)
SIZES = {"small": {"n_eval": 12, "seeds": 5}, "full": {"n_eval": 40, "seeds": 5}}


@STUDIES.register
class Claim(Study):
    name = "claim"
    summary = "which interventions, scopes and metrics a TopK-vs-RandomK claim survives"

    @dataclass(frozen=True)
    class Options:
        task: str | None = field(default=None, metadata={
            "help": "the task: a built-in name or a task file"})  # fmt: skip
        ranking: str | None = field(default=None, metadata={
            "help": "the run folder whose ranking every run is given"})  # fmt: skip
        k: Annotated[int, Interval(ge=1, le=100_000)] = field(default=16, metadata={
            "help": "the heads masked: the ranking's top k against k random ones"})  # fmt: skip
        model: str = field(default="smollm2-135m", metadata={"help": "the model"})
        max_new_tokens: Annotated[int, Interval(ge=1, le=4096)] = field(default=8, metadata={
            "help": "tokens generated per answer"})  # fmt: skip
        filter_correct: bool = field(default=True, metadata={
            "help": "evaluate only the examples the model answers correctly unmasked"})  # fmt: skip

    def options(self) -> dict:
        """:data:`OPTIONS` without ``logit_diff`` unless every example has distractors (what the
        run's plan check asks of the metric)."""
        from interp_heads.tasks import load_task

        task = load_task(self.param("task"))
        if not all(e.distractors for e in task.examples):
            return {**OPTIONS, "metric": {m: v for m, v in OPTIONS["metric"].items()
                                          if m != "logit_diff"}}  # fmt: skip
        return OPTIONS

    def runs(self, size):
        options = self.options()
        base = {"model": self.param("model"), "tasks": [self.param("task")],
                "ranking": self.param("ranking"), "ks": [int(self.param("k"))],
                "selections": ["topk", "randomk"], "exclude_top": True,
                "filter_correct": self.param("filter_correct"),
                "max_new_tokens": int(self.param("max_new_tokens")), **SIZES[size]}  # fmt: skip
        runs = {}
        for cell in cells(options, (END,), ("default",)):
            name = run_name(cell, options, self.name)
            if name in runs:
                continue
            everywhere = cell["scope"] == "all"
            metrics = ["accuracy", *([m for m in options["metric"] if m in LOGIT]
                                     if everywhere else [])]  # fmt: skip
            changes = {**options["intervention"][cell["intervention"]],
                       **options["scope"][cell["scope"]], "metrics": metrics}  # fmt: skip
            runs[name] = StudyRun(name, base, changes)
        return list(runs.values())

    def write_pages(self, folders, docs):
        from interp_heads.figures.escape import md
        from interp_heads.studies.spec_curve.page import write_page

        options = self.options()
        frame = curve_frame(folders, options, (END,), self.name, ("default",))
        intro = (
            f"the claim that masking the top {self.param('k')} heads of the ranking "
            f"{md(self.param('ranking'))} collapses the task {md(self.param('task'))} against "
            f"masking {self.param('k')} random heads (TopK below RandomK with the Holm p < 0.05 "
            "of the exact test with examples and RandomK draws as random factors, Holm over the "
            "page's cells; the 3x drop ratio a secondary reading), under mean ablation at "
            "every position scored by accuracy, and with each of those choices changed "
            "(`interp_heads/studies/claim.py`)."
        )
        return write_page(frame, options, (END,), docs, names=("default",), stem=self.name,
                          title="Which choices the claim survives", intro=intro)  # fmt: skip
