"""interp_heads: find the attention heads a task depends on, and prove it by ablation.

Submodules are importable as namespaces (``interp_heads.attribution``, ``interp_heads.sweep.loop`` ...);
the names below are the small public API. Each is imported on first use (PEP 562), so
``import interp_heads`` (and the ``interp-heads`` command's start-up) does not import torch: the
command installs its Ctrl-C handling before anything heavy loads.
"""

from __future__ import annotations

import importlib

__version__ = "0.2.0"  # the version: pyproject.toml reads it, CHANGELOG.md's top entry names it

# public name -> the module that defines it
_HOME = {
    "LayerMatchedRandomK": "interp_heads.interventions.selections",
    "ModelLoadError": "interp_heads.models.load",
    "RandomK": "interp_heads.interventions.selections",
    "TopK": "interp_heads.interventions.selections",
    "generate": "interp_heads.generation.decode",
    "head_label": "interp_heads.heads",
    "head_means": "interp_heads.interventions.means",
    "load_model": "interp_heads.models.load",
    "mask_heads": "interp_heads.interventions.masks",
    "mask_hooks": "interp_heads.interventions.masks",
    "parse_heads": "interp_heads.heads",
    "render": "interp_heads.tasks.prompts",
    # heavier pieces, not in __all__
    "attribute_heads": "interp_heads.attribution",
    "HeadScores": "interp_heads.attribution",
    "run_sweep": "interp_heads.sweep.loop",
    "SweepConfig": "interp_heads.sweep.loop",
    "plot_sweep": "interp_heads.figures.curves",
    "load_task": "interp_heads.tasks",
    "filter_correct": "interp_heads.tasks",
    "take_correct": "interp_heads.tasks",
    "Task": "interp_heads.tasks",
    "load_run": "interp_heads.report.run",
    "load_plugins": "interp_heads.plugins",
    "resolve_metrics": "interp_heads.metrics",
    "sufficiency": "interp_heads.analysis.sufficiency_result",
    "SufficiencyResult": "interp_heads.analysis.sufficiency_result",
    "find_sufficient_set": "interp_heads.analysis.sufficient_set",
    "SufficientSet": "interp_heads.analysis.sufficient_set",
    "LowK": "interp_heads.interventions.selections",
    "AllButTopK": "interp_heads.interventions.selections",
    "AllButRandomK": "interp_heads.interventions.selections",
}

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
    "mask_hooks",
    "parse_heads",
    "render",
]


def __getattr__(name: str):
    if name in _HOME:
        value = getattr(importlib.import_module(_HOME[name]), name)
        globals()[name] = value  # later look-ups skip this function
        return value
    raise AttributeError(f"module 'interp_heads' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOME})
