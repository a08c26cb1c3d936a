"""Selections: which heads a condition masks, one file per selection, one registry.

A selection is a :class:`Selection` class registered in :data:`SELECTIONS`
(``@SELECTIONS.register``). It names itself (``name`` for the config and ``--selections``,
``display`` for tables, condition keys and legends), says whether it is a random control
(``random``: drawn once per seed; the significance tests compare TopK with these), whether k
counts the heads it keeps rather than masks (``kept``: every other head is masked, a sufficiency
condition) and its line style in the figures (``dash``), builds itself for one task from a :class:`SelectionContext`
(the ranking, the model's shape, the task's salt, the other tasks' rankings) and returns the heads
masked at each k with :meth:`Selection.select`. The sweep's plan, its checks, the statistics and
the figures read all of that from the objects, so a new selection is one new file.
The built-ins are the files this package imports.
"""

# the import order is the registration order: the order names are listed in (help, tables)
# isort: off
from interp_heads.interventions.selections import (  # noqa: F401 (each registers its selection)
    topk,
    randomk,
    layermatched,
    exclusive_topk,
    lowk,
    tailk,
    all_but_topk,
    all_but_randomk,
)

# isort: on
from interp_heads.interventions.selections.all_but_randomk import AllButRandomK
from interp_heads.interventions.selections.all_but_topk import AllButTopK
from interp_heads.interventions.selections.base import (
    SELECTIONS,
    Selection,
    SelectionContext,
    by_display,
    complement,
    display_names,
    make_selections,
    ranked_heads,
)
from interp_heads.interventions.selections.exclusive_topk import ExclusiveTopK
from interp_heads.interventions.selections.layermatched import LayerMatchedRandomK
from interp_heads.interventions.selections.lowk import LowK
from interp_heads.interventions.selections.randomk import RandomK
from interp_heads.interventions.selections.tailk import TailK
from interp_heads.interventions.selections.topk import TopK

__all__ = [
    "SELECTIONS",
    "AllButRandomK",
    "AllButTopK",
    "ExclusiveTopK",
    "LayerMatchedRandomK",
    "LowK",
    "RandomK",
    "Selection",
    "SelectionContext",
    "TailK",
    "TopK",
    "by_display",
    "complement",
    "display_names",
    "make_selections",
    "ranked_heads",
]
