"""``probe``: the Cognitive Mirrors ranking, a probe trained on head activations to tell tasks apart.

It ranks the heads of several tasks together (``attribution.probe.probe_heads``; in a run, the
``probe`` step), so it has no per-task :meth:`score`.
"""

from dataclasses import dataclass, field
from typing import Annotated, Literal

from annotated_types import Gt

from interp_heads.attribution.methods.base import METHODS, Method, Pos
from interp_heads.attribution.methods.base import Options as Common


@METHODS.register
class Probe(Method):
    name = "probe"
    target = "grad x activation of the task probe's logit (Cognitive Mirrors)"
    multi_task = True

    @dataclass(frozen=True)
    class Options(Common):
        """Where the ``hook_z`` feature is read, the probe's shape, its training, its labels, its
        importance and the rows that importance is read on (Cognitive Mirrors' values in the
        help)."""

        probe_position: Literal["last", "answer", "mean", "generated"] = field(
            default="answer",
            metadata={
                "help": "probe: the hook_z feature's position (last prompt token, mean over the "
                "forced-decoded answer's tokens, mean over the prompt, or mean over up to five "
                "tokens of the answer the unmasked model generates: Cognitive Mirrors)"
            },
        )
        probe_kind: Literal["mlp", "linear"] = field(
            default="mlp",
            metadata={
                "help": "probe: per-head projection then an MLP (Cognitive Mirrors), or linear"
            },
        )
        probe_epochs: Pos = field(
            default=40, metadata={"help": "probe: training epochs (Cognitive Mirrors: 100)"}
        )
        probe_batch: Pos = field(
            default=16, metadata={"help": "probe: training batch size (Cognitive Mirrors: 1)"}
        )
        probe_lr: Annotated[float, Gt(0)] = field(
            default=1e-3, metadata={"help": "probe: AdamW learning rate (Cognitive Mirrors: 1e-4)"}
        )
        probe_labels: Literal["tasks", "skills"] = field(
            default="tasks",
            metadata={
                "help": "probe: what it learns to tell apart: the tasks, or the examples' "
                "cognitive skills (a CogQA file's skills, all of them, also those not swept)"
            },
        )
        probe_importance: Literal["mean_abs", "abs_mean"] = field(
            default="mean_abs",
            metadata={
                "help": "probe: a head's score: mean over rows of |grad x act|, or |mean over "
                "rows of grad x act| (Cognitive Mirrors)"
            },
        )
        probe_rows: Literal["heldout", "evaluated"] = field(
            default="heldout",
            metadata={
                "help": "probe: the rows its importance and accuracy are read on: its held-out "
                "split of the rank rows, or the rows the sweep then masks (Cognitive Mirrors; "
                "trains on all rank rows)"
            },
        )

    def reads_evaluated(self, opts) -> bool:
        return opts.probe_rows == "evaluated"  # its importance read on the rows a sweep masks
