"""``probe``: the Cognitive Mirrors ranking, a probe trained on head activations to tell tasks apart.

It ranks the heads of several tasks together (``attribution.probe.probe_heads``; in a run, the
``probe`` step), so it has no per-task :meth:`score`.
"""

from interp_heads.attribution.methods.base import METHODS, Method


class Probe(Method):
    name = "probe"
    target = "grad x activation of the task probe's logit (Cognitive Mirrors)"
    multi_task = True


METHODS.register("probe", Probe())
