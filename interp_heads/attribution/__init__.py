"""Head attribution: rank every attention head by how much a task depends on it.

>>> scores = attribute_heads(model, task, "atp", refine=32)
>>> scores.top_labels(10)
"""

from interp_heads.attribution.api import METHODS, attribute_heads, default_method
from interp_heads.attribution.gradients import (
    atp_scores,
    gradxact_scores,
    headmask_scores,
    z_gradients,
)
from interp_heads.attribution.inputs import Batch, answer_token, frozen_params, make_batches
from interp_heads.attribution.patching import (
    exact_scores,
    mean_ablation_scores,
    patch_heads,
)
from interp_heads.attribution.paths import ablation_ig_scores
from interp_heads.attribution.probe import ProbeSettings, probe_heads
from interp_heads.attribution.scores import HeadScores, overlap, overlap_heatmap
from interp_heads.attribution.verify import verify_ranking

__all__ = [
    "METHODS",
    "default_method",
    "Batch",
    "ablation_ig_scores",
    "HeadScores",
    "answer_token",
    "atp_scores",
    "attribute_heads",
    "exact_scores",
    "frozen_params",
    "gradxact_scores",
    "headmask_scores",
    "make_batches",
    "mean_ablation_scores",
    "overlap",
    "overlap_heatmap",
    "patch_heads",
    "probe_heads",
    "ProbeSettings",
    "verify_ranking",
    "z_gradients",
]
