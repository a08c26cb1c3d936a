"""The probe's config keys (``attribution = "probe"``), part of the ``attribution`` section.

Kept apart from :mod:`interp_heads.config.sections` so that each module stays small; the
``attribution`` section (``AttributionSection``) takes these fields by inheritance, so a TOML
file still writes them flat or under ``[attribution]``. They mirror ``Probe.Options``
(``interp_heads.attribution.methods.probe``), which owns them.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

Pos = Annotated[int, Field(gt=0)]


class ProbeFields(BaseModel):
    probe_position: Literal["last", "answer", "mean", "generated"] = Field(
        "answer",
        description="probe: the hook_z feature's position (last prompt token, mean over the "
        "forced-decoded answer's tokens, mean over the prompt, or mean over up to five tokens "
        "of the answer the unmasked model generates: Cognitive Mirrors)",
    )
    probe_kind: Literal["mlp", "linear"] = Field(
        "mlp", description="probe: per-head projection then an MLP (Cognitive Mirrors), or linear"
    )
    probe_epochs: Pos = Field(40, description="probe: training epochs (Cognitive Mirrors: 100)")
    probe_batch: Pos = Field(16, description="probe: training batch size (Cognitive Mirrors: 1)")
    probe_lr: float = Field(
        1e-3, gt=0, description="probe: AdamW learning rate (Cognitive Mirrors: 1e-4)"
    )
    probe_labels: Literal["tasks", "skills"] = Field(
        "tasks",
        description="probe: what it learns to tell apart: the tasks, or the examples' cognitive "
        "skills (a CogQA file's skills, all of them, also those not swept)",
    )
    probe_importance: Literal["mean_abs", "abs_mean"] = Field(
        "mean_abs",
        description="probe: a head's score: mean over rows of |grad x act|, or |mean over rows of "
        "grad x act| (Cognitive Mirrors)",
    )
    probe_rows: Literal["heldout", "evaluated"] = Field(
        "heldout",
        description="probe: the rows its importance and accuracy are read on: its held-out split "
        "of the rank rows, or the rows the sweep then masks (Cognitive Mirrors; trains on all "
        "rank rows)",
    )
