"""``probe``: the Cognitive Mirrors ranking, a probe trained on head activations to tell tasks apart.

It ranks the heads of several tasks together (``attribution.probe.probe_heads``; in a run, the
``probe`` step), so it has no per-task :meth:`score`.
"""

from dataclasses import dataclass

from interp_heads.attribution.methods.base import METHODS, Method
from interp_heads.attribution.methods.base import Options as Common


@METHODS.register
class Probe(Method):
    name = "probe"
    target = "grad x activation of the task probe's logit (Cognitive Mirrors)"
    multi_task = True

    @dataclass(frozen=True)
    class Options(Common):
        """Where the ``hook_z`` feature is read (``last``, ``answer``, ``mean``, ``generated``),
        the probe's shape (``mlp``: Cognitive Mirrors' per-head projection then an MLP, or
        ``linear``), its training (epochs, batch, learning rate), its labels (``tasks`` or the
        examples' ``skills``), its importance (``mean_abs``: mean |grad x act|, ``abs_mean``:
        the study's |mean grad x act|) and the rows that importance is read on (``heldout`` or
        ``evaluated``: the rows the sweep masks, as the study does)."""

        probe_position: str = "answer"
        probe_kind: str = "mlp"
        probe_epochs: int = 40
        probe_batch: int = 16
        probe_lr: float = 1e-3
        probe_labels: str = "tasks"
        probe_importance: str = "mean_abs"
        probe_rows: str = "heldout"
