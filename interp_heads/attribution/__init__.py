"""Head attribution: rank every attention head by how much a task depends on it.

>>> scores = attribute_heads(model, task, "atp", refine=32)
>>> scores.top_labels(10)

The methods are registered objects (``attribution.methods.METHODS``, one file each). The names
below are imported on first use (PEP 562), so the registry can be read without torch.
"""

from __future__ import annotations

import importlib

_HOME = {
    "METHODS": "methods",
    "Method": "methods",
    "attribute_heads": "api",
    "default_method": "api",
    "atp_scores": "gradients",
    "gradxact_scores": "gradients",
    "headmask_scores": "gradients",
    "z_gradients": "gradients",
    "Batch": "inputs",
    "answer_token": "inputs",
    "frozen_params": "inputs",
    "make_batches": "inputs",
    "exact_scores": "patching",
    "mean_ablation_scores": "patching",
    "patch_heads": "patching",
    "ablation_ig_scores": "paths",
    "ProbeSettings": "probe",
    "probe_heads": "probe",
    "HeadScores": "scores",
    "overlap": "scores",
    "overlap_heatmap": "scores",
    "verify_ranking": "verify",
}

__all__ = sorted(_HOME)


def __getattr__(name: str):
    if name in _HOME:
        module = importlib.import_module(f"interp_heads.attribution.{_HOME[name]}")
        value = getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOME})
