"""``SweepConfig``: everything that determines a sweep's results (its digest is the resume stamp).

A run's sweep config is derived from its ``RunConfig`` by one function,
``RunConfig.sweep_config``: the fields named in :data:`FROM_RUN_CONFIG` are the run config's keys
of the same names, and only ``ks`` (resolved to head counts), ``options`` (the ablation kinds' and
selections' options) and ``fmt`` (the tasks' one format) are computed. It is frozen: a sweep
with other settings (the sufficiency curve, the sufficient-set search) is a new one
(``dataclasses.replace``), checked again.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from interp_heads.choices import MaskPositions, PromptFormat
from interp_heads.errors import InputError
from interp_heads.execution.base import Generation
from interp_heads.interventions.kinds import KINDS, get_kind
from interp_heads.interventions.selections import SELECTIONS
from interp_heads.store import config_digest
from interp_heads.tasks.cognitive_mirrors import STOP_TOKEN

FROM_RUN_CONFIG = ("selections", "seeds", "ablation", "max_new_tokens", "metrics", "positions",
                   "reference", "free_form", "elbow", "batch_padding")  # fmt: skip
"""``SweepConfig``'s fields that are a ``RunConfig`` key of the same name, taken as they are."""


@dataclass(frozen=True)
class SweepConfig:
    """Everything that determines a sweep's results (hashed for resume).

    ``ablation`` is the ablation kind (a name in ``interventions.kinds.KINDS``: ``mean``,
    ``zero``, ``resample``, ``scale`` or a registered one).
    ``positions`` is the mask's scope (``all``, ``last`` or ``generated``); ``options`` are the
    ablation kinds' and the selections' options by name (``KINDS.options()``: :meth:`kind` builds
    the kind with those it declares; ``SELECTIONS.options()``: RandomK's ``exclude_top``).
    ``reference`` is what COMET, MiniLM and chrF score against
    (``gold`` or ``unmasked``: ``interp_heads.metrics.reference``); ``free_form`` generates
    without the first-line stop and scores whole answers. With ``fmt = "cognitive_mirrors"``
    (:attr:`json_answers`) generation stops after ``]`` instead and answers are scored as
    generated, for the metrics that read their JSON block (``metrics.cognitive_mirrors``).
    """

    ks: list[int]
    selections: list[str] = field(default_factory=lambda: ["topk", "randomk"])
    seeds: int = 5
    ablation: str = "mean"
    max_new_tokens: int = 8
    fmt: str | None = None  # None: each task's own format (built-in tasks: "plain")
    metrics: list[str] = field(default_factory=lambda: ["accuracy"])
    positions: str = "all"
    options: dict = field(default_factory=dict)  # the kinds' and selections' options, by name
    reference: str = "gold"
    free_form: bool = False
    elbow: bool = False  # also mask each task's elbow k (``interp_heads.sweep.elbow``)
    batch_padding: int | None = None  # most padding positions a batch holds (``Generation``)

    def __post_init__(self) -> None:
        """Checked values (the mask's scope as its string, ``ks`` and ``selections`` copied)."""
        checked = {
            "ks": list(self.ks),
            "selections": list(self.selections),
            "ablation": KINDS.canonical(self.ablation),
            "positions": str(MaskPositions.parse(str(self.positions), "mask positions")),
            "options": _checked(self.options),
        }
        for name, value in checked.items():
            object.__setattr__(self, name, value)  # frozen: set here only, once

    def kind(self):
        """The ablation kind, built with the options it declares among ``options``."""
        return get_kind(self.ablation, **self.declared_by(KINDS))

    def declared_by(self, registry) -> dict:
        """The options among ``options`` that ``registry``'s classes declare."""
        declared = registry.options()
        return {k: v for k, v in self.options.items() if k in declared}

    def mask_key(self) -> dict | None:
        """The mask settings a resume key adds beside kind and values (None at the defaults)."""
        extra = {"positions": self.positions} if self.positions != "all" else {}
        extra |= self.kind().key()
        return extra or None

    def to_dict(self) -> dict:
        """The fields as the sweep's digest reads them: the ablation kind is stored under the key
        ``method``, each kind option flat under its name (or the ``stored_as`` of its field) and
        only away from its default, and the later settings are left out at their defaults, so
        that existing run folders keep their digests and resume."""
        d = asdict(self)
        d["method"] = d.pop("ablation")
        given = d.pop("options")
        for registry in (KINDS, SELECTIONS):
            defaults, kept = registry.option_defaults(), registry.kept_in("sweep")
            for name, (_, f) in registry.options().items():
                value = given.get(name, defaults[name])
                if value != defaults[name] or name in kept:
                    d[f.metadata.get("stored_as", name)] = value
        if d["positions"] == "all":
            del d["positions"]
        later = (("reference", "gold"), ("free_form", False), ("elbow", False),
                 ("batch_padding", None))  # fmt: skip
        for key, default in later:
            if d[key] == default:
                del d[key]
        return d

    @property
    def json_answers(self) -> bool:
        """Whether the prompts are the Cognitive Mirrors template (answers as JSON blocks)."""
        return self.fmt == PromptFormat.COGNITIVE_MIRRORS

    def generation(self, batch_size: int) -> Generation:
        """How this sweep generates at ``batch_size`` rows per batch."""
        if self.json_answers:
            return Generation(
                self.max_new_tokens, batch_size, False, STOP_TOKEN, self.batch_padding
            )
        return Generation(
            self.max_new_tokens, batch_size, not self.free_form, batch_padding=self.batch_padding
        )

    def generation_key(self, batch_size: int) -> dict:
        """The generation settings as resume keys hold them."""
        return self.generation(batch_size).key()

    def digest(self) -> str:
        return config_digest(self.to_dict())


def _checked(options: dict) -> dict:
    """``options`` checked by the kind or selection that declares each (an unknown name is an
    InputError naming both registries' options)."""
    kinds, sels = KINDS.options(), SELECTIONS.options()
    unknown = sorted(set(options) - set(kinds) - set(sels))
    if unknown:
        known = ", ".join([*kinds, *sels]) or "none"
        raise InputError(f"unknown sweep option {unknown[0]!r}; the kinds' and selections' "
                         f"options: {known}")  # fmt: skip
    return KINDS.check({k: v for k, v in options.items() if k in kinds}) | SELECTIONS.check(
        {k: v for k, v in options.items() if k in sels}
    )
