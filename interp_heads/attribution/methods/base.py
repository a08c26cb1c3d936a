"""The attribution method's base class, options, registry and rules (``attribution.methods``)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Annotated, ClassVar, Literal

from annotated_types import Ge, Gt

from interp_heads.errors import InputError
from interp_heads.registry import NoContext, Registry

AUTO = "auto"
AUTO_CHOICES = ("atp", "ablation_atp")  # with corrupted prompts, without
# the bounds a method's option may declare in its type (the config checks them, the flags too)
NonNeg = Annotated[int, Ge(0)]
Pos = Annotated[int, Gt(0)]


@dataclass(frozen=True)
class Options:
    """What every method takes besides the model and the batches. A method with options of its
    own subclasses this (``AblationAtP.Options`` adds ``rivals``, ``exact_layers``, ``lookahead``);
    each own field is a config key (``config.options``): its type (bounds as ``NonNeg``, ``Pos``),
    default and ``metadata["help"]`` are the key's."""

    ablation: str = "mean"
    seed: int = 0
    refine: int | None = None
    max_rows: int = 128
    fmt: str = "auto"


COMMON = tuple(f.name for f in dataclasses.fields(Options))


class Method:
    """An attribution method. Subclasses set the class attributes and implement :meth:`score`."""

    name: ClassVar[str] = ""
    aliases: ClassVar[tuple[str, ...]] = ()
    target: ClassVar[str] = ""  # what the score measures (``HeadScores.target``)
    corrupted: ClassVar[Literal["never", "required", "optional"]] = "never"
    signed: ClassVar[bool] = False  # rank by signed score: largest drop first
    refine_with: ClassVar[Literal["exact", "mean_ablation"]] = "exact"
    kinds: ClassVar[Literal["any", "linear", "mean"]] = "any"  # ablation kinds it estimates
    multi_task: ClassVar[bool] = False  # ranks several tasks together (no ``score``)
    gradient: ClassVar[bool] = False  # a backward pass through the model: batches memory-capped
    Options: ClassVar[type[Options]] = Options  # its options: the common ones plus its own

    @classmethod
    def build(cls, options, ctx: NoContext) -> Method:
        """The method (``METHODS.build``). A method holds no state: its options, common and own,
        reach each call as ``opts`` (:func:`check_method` builds them with the task's rules);
        its own options are ``METHODS.own_options(cls)``."""
        return cls()

    def defaults(self, opts: Options) -> Options:
        """``opts`` with this method's defaults filled in (e.g. ``exact_layers``)."""
        return opts

    def check(self, opts: Options, model_cfg=None) -> None:
        """Rules on this method's own options (with ``model_cfg``: their ranges); InputError."""

    def exact_layers(self, opts: Options) -> int:
        """How many first layers this method already scores by their exact drop (``refine`` skips them)."""
        return 0

    def score(self, model, task, batches, opts: Options, per_example: list):
        """``(scores [layer, head], target)``; ``per_example`` receives ``[example, layer, head]``."""
        raise NotImplementedError

    def reads_evaluated(self, opts: Options) -> bool:
        """Whether its scores read the rows a sweep evaluates (so a run that only ranks needs
        them split off too)."""
        return False

    def needs_corrupted(self, opts: Options, has_corrupted: bool) -> bool:
        refine_exact = opts.refine is not None and self.refine_with == "exact"
        optional = self.corrupted == "optional" and has_corrupted
        return self.corrupted == "required" or refine_exact or optional


METHODS: Registry[type[Method]] = Registry("attribution method", also=(AUTO,), common=Options)


def resolve(name: str, has_corrupted: bool) -> Method:
    """The method ``name`` means for a task (``auto``: atp with corrupted prompts, else ablation_atp)."""
    name = METHODS.canonical(name)
    if name == AUTO:
        name = AUTO_CHOICES[0] if has_corrupted else AUTO_CHOICES[1]
    return METHODS.build(name)


def check_method(
    name: str,
    settings: dict,
    *,
    has_corrupted: bool | None = None,
    model_cfg=None,
    task: str | None = None,
) -> Options:
    """Every rule about method ``name`` with ``settings``; returns the method's options, completed.

    ``settings``: the common options and any method's own options (an option another method owns
    is refused unless it is at its default). ``has_corrupted`` None (a config before its tasks are
    read): ``auto`` passes when either method it can mean passes. ``model_cfg`` adds the range
    checks; ``task`` names the task in the message (and that ``auto`` was resolved for it).
    """
    if METHODS.canonical(name) == AUTO and has_corrupted is None:
        errors = []
        for choice in AUTO_CHOICES:
            try:
                return check_method(choice, settings, model_cfg=model_cfg)
            except InputError as exc:
                errors.append(exc)
        raise errors[-1]
    method = resolve(name, bool(has_corrupted))
    said = f"; {name!r} means {method.name!r} for this task" if method.name != name else ""
    where = f"task {task!r}: " if task else ""
    opts = method.defaults(_options(method, settings, where, said))
    _check_kind(method, opts)
    method.check(opts, model_cfg)
    if has_corrupted is False and method.needs_corrupted(opts, False):
        refine = " with refine" if opts.refine else ""
        raise InputError(
            f"{where}method {method.name!r}{refine} needs corrupted prompts; task has none "
            "(use 'ablation_atp', the default for such tasks, or 'mean_ablation', 'gradxact', "
            "'headmask')"
        )
    return opts


def _options(method: Method, settings: dict, where: str, said: str) -> Options:
    """``method.Options`` from ``settings``; another method's option must be at its default."""
    mine = set(COMMON) | _own(type(method))
    for option, value in settings.items():
        if option in mine:
            continue
        owners = [c for c in METHODS.classes() if option in _own(c)]
        if not owners:
            raise InputError(f"{where}unknown attribution option {option!r}")
        # a name two methods declare has one default (``Registry`` refuses two)
        if value not in (METHODS.option_defaults()[option], 0, None):
            names = " or ".join(repr(c.name) for c in owners)
            raise InputError(f"{where}{option} needs attribution {names}{said}")
    return method.Options(**{k: v for k, v in settings.items() if k in mine})


def _own(cls) -> set[str]:
    """The names of the options ``cls`` declares besides the common ones."""
    return {f.name for f in METHODS.own_options(cls)}


def _check_kind(method: Method, opts: Options) -> None:
    from interp_heads.interventions.kinds import get_kind

    kind = get_kind(opts.ablation)
    if method.kinds == "mean" and kind.name != "mean":
        raise InputError(f"{method.name} integrates along z -> task mean: use ablation='mean'")
    if method.kinds == "linear" and not kind.linear:
        raise InputError(
            f"ablation kind {kind.name!r} has no linear baseline: {method.name} cannot estimate it"
        )
    if method.refine_with == "mean_ablation" and opts.refine is not None and kind.name != "mean":
        raise InputError(
            f"refine with {method.name} confirms heads by exact mean ablation: use ablation='mean'"
        )
