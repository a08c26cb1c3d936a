"""interp_heads: find the attention heads a task depends on, and prove it by ablation.

Submodules are importable as namespaces (``interp_heads.attribution``, ``interp_heads.sweep`` ...);
the names below are the small public API.
"""

from interp_heads.ablation import head_means, mask_heads
from interp_heads.generation import generate
from interp_heads.heads import head_label, parse_heads
from interp_heads.models import ModelLoadError, load_model
from interp_heads.prompts import render
from interp_heads.selection import LayerMatchedRandomK, RandomK, TopK

__version__ = "0.1.0"

__all__ = [
    "LayerMatchedRandomK",
    "ModelLoadError",
    "RandomK",
    "TopK",
    "generate",
    "head_label",
    "head_means",
    "load_model",
    "mask_heads",
    "parse_heads",
    "render",
]


def __getattr__(name):  # heavier pieces load on first use
    lazy = {
        "attribute_heads": ("interp_heads.attribution", "attribute_heads"),
        "HeadScores": ("interp_heads.attribution", "HeadScores"),
        "run_sweep": ("interp_heads.sweep", "run_sweep"),
        "SweepConfig": ("interp_heads.sweep", "SweepConfig"),
        "plot_sweep": ("interp_heads.report.figures", "plot_sweep"),
        "load_task": ("interp_heads.tasks", "load_task"),
        "filter_correct": ("interp_heads.tasks", "filter_correct"),
        "resolve_metrics": ("interp_heads.metrics", "resolve_metrics"),
    }
    if name in lazy:
        import importlib

        module, attr = lazy[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'interp_heads' has no attribute {name!r}")
