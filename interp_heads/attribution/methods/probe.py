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
        """Where the ``hook_z`` feature is read (``last``, ``answer``, ``mean``), the probe's
        shape (``mlp``: Cognitive Mirrors' per-head projection then an MLP, or ``linear``) and
        its training epochs."""

        probe_position: str = "answer"
        probe_kind: str = "mlp"
        probe_epochs: int = 40
