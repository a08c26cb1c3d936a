"""Attribution methods: how heads are scored, one file per method, one registry.

A method is a :class:`Method` class registered in :data:`METHODS` (``@METHODS.register``). It
declares what it needs (corrupted prompts, which ablation kinds it estimates), its own options as
a small dataclass (``AblationAtP.Options``: ``rivals``, ``exact_layers``, ``lookahead``; the
common ones are :class:`Options`) with their rules (:meth:`Method.check`), whether its score is
signed, what ``refine`` confirms its top heads with, and what its score measures;
:meth:`Method.score` computes the scores.
:func:`check_method` holds every rule about a method and its options, and is what the config,
the pipeline and ``attribute_heads`` call, so a rule lives in one place.
The built-ins are the files this package imports; ``auto`` (``METHODS.also``) picks one per task.
"""

# the import order is the registration order: the order names are listed in (help, tables)
# isort: off
from interp_heads.attribution.methods import (  # noqa: F401 (each registers its method)
    exact,
    atp,
    ablation_atp,
    ablation_ig,
    gradxact,
    headmask,
    mean_ablation,
    retrieval_score,
    probe,
)

# isort: on
from interp_heads.attribution.methods.base import (
    AUTO,
    METHODS,
    Method,
    Options,
    check_method,
    resolve,
)

__all__ = ["AUTO", "METHODS", "Method", "Options", "check_method", "resolve"]
